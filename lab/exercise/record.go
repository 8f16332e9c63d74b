package exercise

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab"
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
	Containers   []string      `json:"containers,omitempty"` // the worker containers of those nodes
	Result       *Result       `json:"result,omitempty"`
	URL          string        `json:"url,omitempty"`
}

// Record is what an exercise observed; `mltrain verify` reads it back.
type Record struct {
	Exercise   string    `json:"exercise"`
	OK         bool      `json:"ok"`
	Expected   string    `json:"expected"`
	Observed   string    `json:"observed"`
	Look       []string  `json:"look"`
	Numbers    []Number  `json:"numbers,omitempty"`
	Jobs       []JobRun  `json:"jobs,omitempty"`
	Problems   []string  `json:"problems,omitempty"`
	Error      string    `json:"error,omitempty"`
	RayAddress string    `json:"ray_address"`
	RayVersion string    `json:"ray_version,omitempty"`
	Quick      bool      `json:"quick"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`

	Infeasible *InfeasibleObs `json:"infeasible,omitempty"`
	Fractional *FractionalObs `json:"fractional,omitempty"`
	Fault      *FaultObs      `json:"fault,omitempty"`
	Tune       *TuneObs       `json:"tune,omitempty"`
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
	StoppedAfter    bool               `json:"stopped_after"`
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

// FaultObs is what the fault exercise saw.
type FaultObs struct {
	Run               string    `json:"run"`
	TrainingNodeIP    string    `json:"training_node_ip"`
	StoppedContainer  string    `json:"stopped_container"`
	StoppedAt         time.Time `json:"stopped_at"`
	LatestAtStop      string    `json:"latest_checkpoint_at_stop"`
	ResumedFrom       string    `json:"resumed_from"`
	ResumedOnNodeIP   string    `json:"resumed_on_node_ip"`
	ResumedContainer  string    `json:"resumed_container,omitempty"`
	RecoverySeconds   float64   `json:"recovery_seconds"`
	CheckpointInMinIO bool      `json:"checkpoint_in_minio"`
	ResumedFromLatest bool      `json:"resumed_from_latest"`
	Checkpoints       []string  `json:"checkpoints"`
	Restarted         bool      `json:"worker_restarted"`
	RestartError      string    `json:"restart_error,omitempty"`
}

// TuneObs is what the tune exercise saw.
type TuneObs struct {
	Samples      int     `json:"samples"`
	MaxT         int     `json:"max_t"`
	StoppedEarly int     `json:"stopped_early"`
	Completed    int     `json:"completed"`
	Errored      int     `json:"errored"`
	Best         *Trial  `json:"best,omitempty"`
	Trials       []Trial `json:"trials,omitempty"`
}

// SaveRecord writes rec to the state dir (atomically, 0600).
func SaveRecord(dir lab.StateDir, rec Record) error {
	if err := dir.WriteJSON(lab.RecordFile(rec.Exercise), rec); err != nil {
		return fmt.Errorf("save exercise record %s: %w", rec.Exercise, err)
	}
	return nil
}

// LoadRecord reads an exercise's last record; an error wrapping
// fs.ErrNotExist when it never ran.
func LoadRecord(dir lab.StateDir, name string) (Record, error) {
	var rec Record
	if err := dir.ReadJSON(lab.RecordFile(name), &rec); err != nil {
		return Record{}, fmt.Errorf("exercise %s record: %w", name, err)
	}
	return rec, nil
}

// LoadRecords reads every exercise's last record, in lab order; exercises
// that never ran are missing from the map.
func LoadRecords(dir lab.StateDir) (map[string]Record, error) {
	out := map[string]Record{}
	for _, n := range Names {
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
