package exercise

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/state"
)

// JobRun is one Ray job an exercise submitted.
type JobRun struct {
	SubmissionID string        `json:"submission_id"`
	Entrypoint   string        `json:"entrypoint"`
	Status       ray.JobStatus `json:"status"`
	Message      string        `json:"message,omitempty"`
	Start        time.Time     `json:"start,omitempty"`
	End          time.Time     `json:"end,omitempty"`
	Seconds      float64       `json:"seconds,omitempty"`
	NodeIPs      []string      `json:"node_ips,omitempty"`   // where its training workers ran
	NodeIDs      []string      `json:"node_ids,omitempty"`   // ... as Ray's node ids (several nodes may share an address)
	Containers   []string      `json:"containers,omitempty"` // the worker containers of those nodes
	Result       *Result       `json:"result,omitempty"`
	URL          string        `json:"url,omitempty"`
}

// Where says where the job's training ran, for sentences: its worker
// containers when known, else its nodes' addresses.
func (j JobRun) Where() string {
	switch {
	case len(j.Containers) > 0:
		return strings.Join(j.Containers, " and ")
	case len(j.NodeIPs) > 0:
		return "node " + strings.Join(j.NodeIPs, " and ")
	}
	return "an unreported node"
}

func (j JobRun) reported() bool { return len(j.Containers) > 0 || len(j.NodeIPs) > 0 }

// trainingNodes are the distinct nodes the job trained on: by Ray's node id
// when reported, since the nodes of a lab that spans hosts share their
// host's address.
func (j JobRun) trainingNodes() []string {
	if len(j.NodeIDs) > 0 {
		return j.NodeIDs
	}
	return j.NodeIPs
}

// Record is what an exercise observed; `mltrain verify` reads it back.
type Record struct {
	Exercise   string   `json:"exercise"`
	OK         bool     `json:"ok"`
	Expected   string   `json:"expected"`
	Observed   string   `json:"observed"`
	Look       []string `json:"look"`
	Numbers    []Number `json:"numbers,omitempty"`
	Jobs       []JobRun `json:"jobs,omitempty"`
	Problems   []string `json:"problems,omitempty"`
	Error      string   `json:"error,omitempty"`
	RayAddress string   `json:"ray_address"`
	RayVersion string   `json:"ray_version,omitempty"`
	Quick      bool     `json:"quick"`
	// How it ran, beside Quick: random images, the CPU requests fitted to
	// the lab, a CPU rehearsal lab, workers sharing a GPU (Conditions).
	FakeData  bool      `json:"fake_data,omitempty"`
	Sizing    *Sizing   `json:"sizing,omitempty"`
	Rehearsal bool      `json:"cpu_rehearsal,omitempty"`
	SharedGPU bool      `json:"shared_gpu,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`

	Infeasible *InfeasibleObs `json:"infeasible,omitempty"`
	Fractional *FractionalObs `json:"fractional,omitempty"`
	Fault      *FaultObs      `json:"fault,omitempty"`
	Tune       *TuneObs       `json:"tune,omitempty"`
}

// LastJob is the job the exercise submitted last (the one it is about,
// but for fractional's baseline).
func (rec Record) LastJob() (JobRun, bool) {
	if len(rec.Jobs) == 0 {
		return JobRun{}, false
	}
	return rec.Jobs[len(rec.Jobs)-1], true
}

// Number is one measured value, for the table and --json.
type Number struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// InfeasibleObs is what the infeasible exercise saw.
type InfeasibleObs struct {
	PendingSeconds  float64            `json:"pending_seconds"`
	StayedPending   bool               `json:"stayed_pending"`
	MaxGPUsPerNode  float64            `json:"max_gpus_per_node"`
	AliveNodes      int                `json:"alive_nodes"`
	Demand          *ray.Demand        `json:"demand,omitempty"`
	DemandSeenAfter float64            `json:"demand_seen_after_seconds,omitempty"`
	JobMessage      string             `json:"job_message"`
	StoppedAfter    bool               `json:"stopped_after"`      // the job was ended after observing (terminal)
	EndedBy         string             `json:"ended_by,omitempty"` // how: killing its supervisor actor, or a stop
	Kept            bool               `json:"kept,omitempty"`     // --keep: left PENDING on purpose
	Nodes           []ray.Node         `json:"nodes,omitempty"`
	ClusterStatus   string             `json:"cluster_status,omitempty"`
	Requested       map[string]float64 `json:"requested"`
}

// FractionalObs is what the fractional exercise saw.
type FractionalObs struct {
	AloneSeconds    float64             `json:"alone_seconds"`
	MakespanSeconds float64             `json:"makespan_seconds"`
	Ratio           float64             `json:"makespan_over_alone"`
	MaxConcurrent   int                 `json:"max_concurrent"`
	JobsByNode      map[string][]string `json:"jobs_by_node"` // node (container name or IP) -> submission ids
	SharedNode      string              `json:"shared_node,omitempty"`
}

// ByNode says how many jobs each node ran, nodes in order.
func (o FractionalObs) ByNode() string {
	keys := slices.Sorted(maps.Keys(o.JobsByNode))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ran %d", k, len(o.JobsByNode[k]))
	}
	if len(parts) == 0 {
		return "no node reported"
	}
	return strings.Join(parts, ", ")
}

// FaultObs is what the fault exercise saw. Checkpoints are bucket-relative
// paths, "<run>/checkpoint_epoch_000003".
type FaultObs struct {
	Run              string    `json:"run"`
	TrainingNodeIP   string    `json:"training_node_ip"`
	TrainingNodeID   string    `json:"training_node_id,omitempty"`
	StoppedContainer string    `json:"stopped_container"`
	StoppedAt        time.Time `json:"stopped_at"`
	// Registered are the checkpoints train.py reported registered with Ray
	// Train before the resume, oldest first; LatestAtStop is the newest
	// of them when the worker was stopped (RegisteredAtStop: it was).
	Registered       []string `json:"registered_checkpoints,omitempty"`
	LatestAtStop     string   `json:"latest_checkpoint_at_stop"`
	StopEpoch        *int     `json:"stop_epoch,omitempty"`
	RegisteredAtStop bool     `json:"registered_at_stop"`
	ResumedFrom      string   `json:"resumed_from"`
	ResumedEpoch     *int     `json:"resumed_epoch,omitempty"` // the last epoch the resumed checkpoint holds
	ResumedOnNodeIP  string   `json:"resumed_on_node_ip"`
	ResumedOnNodeID  string   `json:"resumed_on_node_id,omitempty"`
	ResumedContainer string   `json:"resumed_container,omitempty"`
	RecoverySeconds  float64  `json:"recovery_seconds"`
	// ResumedFromReported: the resumed checkpoint is one train.py reported
	// registered; ResumedFromLatest: it is LatestAtStop or newer.
	ResumedFromReported bool `json:"resumed_from_reported"`
	ResumedFromLatest   bool `json:"resumed_from_latest"`
	// CheckpointInMinIO: MinIO listed the resumed checkpoint at the stop or
	// at a poll until training resumed. Checkpoints is MinIO's listing at the end of
	// the job, after retention (train.py keeps the newest 2 by default), so
	// it need not hold the resumed one.
	CheckpointInMinIO bool     `json:"checkpoint_in_minio"`
	Checkpoints       []string `json:"checkpoints"`
	Restarted         bool     `json:"worker_restarted"`
	RestartError      string   `json:"restart_error,omitempty"`
}

// ResumedOn is where training resumed: the container when known.
func (o FaultObs) ResumedOn() string {
	if o.ResumedContainer != "" {
		return o.ResumedContainer
	}
	return o.ResumedOnNodeIP
}

// TuneObs is what the tune exercise saw: how many trials ASHA stopped, ran
// to max_t, ended on their own (the training function returned before
// max_t) or errored.
type TuneObs struct {
	Samples int `json:"samples"`
	MaxT    int `json:"max_t"`
	// EndsKnown: train.py told how each trial ended. Without it (an older
	// train.py, or a record of an older mltrain) the counts below cannot
	// tell ASHA's stops from trials that ended on their own.
	EndsKnown          bool `json:"ends_known"`
	StoppedByScheduler int  `json:"stopped_by_scheduler"`
	EndedByScript      int  `json:"ended_by_script"`
	// StoppedEarly is StoppedByScheduler, under its older name.
	StoppedEarly int     `json:"stopped_early"`
	Completed    int     `json:"completed"`
	Errored      int     `json:"errored"`
	Best         *Trial  `json:"best,omitempty"`
	Trials       []Trial `json:"trials,omitempty"`
}

// SaveRecord writes rec to the state dir (atomically, 0600).
func SaveRecord(dir state.Dir, rec Record) error {
	if err := dir.WriteJSON(state.RecordFile(rec.Exercise), rec); err != nil {
		return fmt.Errorf("save exercise record %s: %w", rec.Exercise, err)
	}
	return nil
}

// LoadRecord reads an exercise's last record; an error wrapping
// fs.ErrNotExist when it never ran.
func LoadRecord(dir state.Dir, name string) (Record, error) {
	var rec Record
	if err := dir.ReadJSON(state.RecordFile(name), &rec); err != nil {
		return Record{}, fmt.Errorf("exercise %s record: %w", name, err)
	}
	return rec, nil
}

// LoadRecords reads every exercise's last record, in lab order; exercises
// that never ran are missing from the map.
func LoadRecords(dir state.Dir) (map[string]Record, error) {
	out := map[string]Record{}
	for _, n := range Names() {
		rec, err := LoadRecord(dir, n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		out[n] = rec
	}
	return out, nil
}

// Conditions are how the exercise ran where that is not the course's
// lesson at full size: a verdict earned so is never shown as a plain pass.
func (r Record) Conditions() []string {
	var c []string
	if r.Quick {
		c = append(c, "quick")
	}
	if r.FakeData {
		c = append(c, "fake data")
	}
	if s := r.Sizing; s != nil && s.Asked != s.Course {
		c = append(c, fmt.Sprintf("%g CPUs of the course's %g", s.Asked, s.Course))
	}
	if r.Rehearsal {
		c = append(c, "CPU rehearsal")
	}
	if r.SharedGPU {
		c = append(c, "shared GPU")
	}
	return c
}
