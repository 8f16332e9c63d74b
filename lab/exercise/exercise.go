// Package exercise runs the lab's scripted exercises against a Ray cluster:
// it submits the workspace as a Ray job with the flags that replace the
// course's git branches, watches what the cluster does, measures it, and says
// whether the cluster behaved as the lesson expects. Each run leaves a Record
// in the state directory for `mltrain verify`.
package exercise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/workspace"
)

// Env is everything an exercise talks to; the command layer fills it.
type Env struct {
	Ray       *ray.Client
	Store     *store.Client // needed by fault (checkpoints); optional elsewhere
	Engine    docker.Engine // needed by fault (stop/start a worker); optional elsewhere
	Project   string        // compose project of the lab's containers
	StateDir  string        // records go to <StateDir>/exercises/<name>.json
	Workspace string        // submitted as working_dir; default <StateDir>/workspace
	Bucket    string        // checkpoint bucket; default "ray"
	// JobEnv is added to the job's runtime_env env_vars (over runtime.json's),
	// e.g. MLTRAIN_ACCELERATOR=cpu for a CPU rehearsal.
	JobEnv   map[string]string
	Reporter progress.Reporter
	Now      func() time.Time
}

// Options are the exercise flags.
type Options struct {
	Quick    bool // a few batches per epoch (rehearsal)
	FakeData bool // random images, no dataset or weights download
	Epochs   int  // 0: train.py's default (20, or 2 with Quick; fault uses more)
	// CPUs overrides every CPU request (entrypoint and per worker), for
	// clusters whose workers have fewer CPUs than the course's 8.
	CPUs       float64
	Observe    time.Duration // infeasible: how long to watch it stay PENDING (30s)
	Keep       bool          // infeasible: leave the job pending instead of stopping it
	NumSamples int           // tune: trials (16; 8 with Quick)
	Timeout    time.Duration // per job (default 30m quick, 3h otherwise)
	// CheckpointTimeout bounds the wait for the first checkpoint (fault).
	CheckpointTimeout time.Duration
	Poll              time.Duration // between status polls (2s)
}

func (o Options) withDefaults() Options {
	if o.Observe <= 0 {
		o.Observe = 30 * time.Second
	}
	if o.NumSamples <= 0 {
		o.NumSamples = 16
		if o.Quick {
			o.NumSamples = 8
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Hour
		if o.Quick {
			o.Timeout = 30 * time.Minute
		}
	}
	if o.CheckpointTimeout <= 0 {
		o.CheckpointTimeout = 15 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	return o
}

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

// ErrNotObserved is returned (wrapped) when an exercise ran but the cluster
// did not behave as the lesson expects.
var ErrNotObserved = errors.New("expected behaviour not observed")

// Names are the exercises in the order of the lab.
var Names = []string{"submit", "infeasible", "multi", "fractional", "fault", "tune"}

// Run runs one exercise by name and saves its record (when it got far enough
// to have one). The error is non-nil unless the expected behaviour was seen.
func Run(ctx context.Context, env Env, name string, o Options) (Record, error) {
	fn, ok := map[string]func(context.Context, *runner) error{
		"submit": runSubmit, "infeasible": runInfeasible, "multi": runMulti,
		"fractional": runFractional, "fault": runFault, "tune": runTune,
	}[name]
	if !ok {
		return Record{}, clierr.WithCode(clierr.Hintf("run 'mltrain lab guide' to see the exercises",
			"unknown exercise %q (exercises: %s, all, guide)", name, strings.Join(Names, ", ")), clierr.ExitNotBuilt)
	}
	if env.Ray == nil {
		return Record{}, clierr.Hintf("set RAY_ADDRESS or run 'mltrain up'", "exercise %s: no Ray dashboard to talk to", name)
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Bucket == "" {
		env.Bucket = store.DefaultBucket
	}
	r := &runner{env: env, o: o.withDefaults(), rec: Record{Exercise: name, Quick: o.Quick, RayAddress: env.Ray.Address()}}
	spec := SpecOf(name)
	r.rec.Expected = spec.Expected
	r.rec.Started = env.Now()
	step := "lab " + name
	progress.Begin(env.Reporter, step, spec.Title)
	err := r.start(ctx)
	if err == nil {
		err = fn(ctx, r)
	}
	r.rec.Finished = env.Now()
	if err != nil {
		r.rec.OK = false
		r.rec.Error = err.Error()
		progress.Failed(env.Reporter, step, err)
	} else {
		r.rec.OK = true
		progress.End(env.Reporter, step, r.rec.Observed)
	}
	if env.StateDir != "" {
		if serr := SaveRecord(env.StateDir, r.rec); serr != nil && err == nil {
			err = serr
		}
	}
	return r.rec, err
}

// All runs every exercise in order, going on after a failure so an
// instructor's rehearsal shows every problem at once.
func All(ctx context.Context, env Env, o Options) ([]Record, error) {
	var recs []Record
	var failed []string
	for _, n := range Names {
		rec, err := Run(ctx, env, n, o)
		recs = append(recs, rec)
		if err != nil {
			failed = append(failed, n)
			if ctx.Err() != nil || errors.Is(err, ray.ErrUnreachable) || errors.Is(err, ray.ErrAuthMissing) || errors.Is(err, ray.ErrAuthInvalid) {
				return recs, err // nothing else can work
			}
		}
	}
	if len(failed) > 0 {
		return recs, clierr.Hintf("run the failed exercises one by one: mltrain lab "+failed[0],
			"%d of %d exercises did not behave as expected: %s: %w", len(failed), len(Names), strings.Join(failed, ", "), ErrNotObserved)
	}
	return recs, nil
}

// RecordPath is where an exercise's record is kept.
func RecordPath(stateDir, name string) string {
	return filepath.Join(stateDir, "exercises", name+".json")
}

// SaveRecord writes rec to the state dir (atomically).
func SaveRecord(stateDir string, rec Record) error {
	p := RecordPath(stateDir, rec.Exercise)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("save exercise record: %w", err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("save exercise record %s: %w", rec.Exercise, err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save exercise record %s: %w", p, err)
	}
	return os.Rename(tmp, p)
}

// LoadRecord reads an exercise's last record; os.ErrNotExist when it never ran.
func LoadRecord(stateDir, name string) (Record, error) {
	b, err := os.ReadFile(RecordPath(stateDir, name))
	if err != nil {
		return Record{}, fmt.Errorf("exercise %s record: %w", name, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("exercise %s record %s: %w", name, RecordPath(stateDir, name), err)
	}
	return rec, nil
}

// LoadRecords reads every exercise's last record, in lab order; exercises
// that never ran are missing from the map.
func LoadRecords(stateDir string) (map[string]Record, error) {
	out := map[string]Record{}
	for _, n := range Names {
		rec, err := LoadRecord(stateDir, n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		out[n] = rec
	}
	return out, nil
}

// runner carries one exercise run.
type runner struct {
	env     Env
	o       Options
	rec     Record
	runtime map[string]any // prepared once: the package is uploaded once
	seq     int
	events  map[int][]Event // per job index, from the last log read
}

func (r *runner) step() string { return "lab " + r.rec.Exercise }

func (r *runner) say(format string, args ...any) {
	progress.Say(r.env.Reporter, r.step(), fmt.Sprintf(format, args...))
}

func (r *runner) number(name string, v float64, unit string) {
	r.rec.Numbers = append(r.rec.Numbers, Number{Name: name, Value: v, Unit: unit})
}

func (r *runner) problem(format string, args ...any) {
	r.rec.Problems = append(r.rec.Problems, fmt.Sprintf(format, args...))
}

func (r *runner) notObserved() error {
	return clierr.Hintf("read the record with 'mltrain lab "+r.rec.Exercise+" --json' and the job logs in the dashboard",
		"exercise %s: %w: %s", r.rec.Exercise, ErrNotObserved, strings.Join(r.rec.Problems, "; "))
}

// start checks Ray answers, readies the workspace and uploads it once.
func (r *runner) start(ctx context.Context) error {
	v, err := r.env.Ray.Version(ctx)
	if err != nil {
		return err
	}
	r.rec.RayVersion = v.RayVersion
	dir := r.env.Workspace
	if dir == "" {
		if r.env.StateDir == "" {
			return clierr.Hintf("pass --workspace DIR", "no workspace: neither --workspace nor a state directory was given")
		}
		dir = filepath.Join(r.env.StateDir, "workspace")
		if written, err := workspace.Ensure(dir); err != nil {
			return err
		} else if len(written) > 0 {
			progress.Note(r.env.Reporter, fmt.Sprintf("wrote the lab workspace to %s (%s)", dir, strings.Join(written, ", ")))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "train.py")); err != nil {
		return clierr.WithHint(fmt.Errorf("workspace %s has no train.py: %w", dir, err),
			"pass --workspace with the lab's workspace, or remove the directory to get a fresh copy")
	}
	env, err := ray.LoadRuntimeEnv(filepath.Join(dir, "runtime.json"))
	if err != nil {
		return err
	}
	env["working_dir"] = dir
	if len(r.env.JobEnv) > 0 {
		vars := map[string]any{}
		if old, ok := env["env_vars"].(map[string]any); ok {
			for k, v := range old {
				vars[k] = v
			}
		}
		for k, v := range r.env.JobEnv {
			vars[k] = v
		}
		env["env_vars"] = vars
	}
	r.say("packaging %s", dir)
	prep, err := r.env.Ray.PrepareRuntimeEnv(ctx, env, dir)
	if err != nil {
		return err
	}
	if prep.Package != nil {
		what := "already on the cluster"
		if prep.Uploaded {
			what = "uploaded"
		}
		r.say("workspace %s: %d files, %d KiB, %s", prep.Package.URI, prep.Package.Files, len(prep.Package.Zip)>>10, what)
	}
	r.runtime = prep.RuntimeEnv
	return nil
}

// jobSpec is one submission.
type jobSpec struct {
	args    []string // train.py flags
	gpus    float64  // entrypoint resources (plain mode)
	cpus    float64
	runName bool // pass --run-name <submission id>
}

func (r *runner) cpus(def float64) float64 {
	if r.o.CPUs > 0 {
		return r.o.CPUs
	}
	return def
}

func (r *runner) trainArgs(extra ...string) []string {
	args := append([]string(nil), extra...)
	if r.o.Quick {
		args = append(args, "--quick")
	}
	if r.o.FakeData {
		args = append(args, "--fake-data")
	}
	if r.o.Epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(r.o.Epochs))
	}
	return args
}

func newID(exercise string, now time.Time, n int) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("mltrain-%s-%s-%d-%s", exercise, now.UTC().Format("20060102-150405"), n, hex.EncodeToString(b))
}

// submit sends one job and records it.
func (r *runner) submit(ctx context.Context, js jobSpec) (int, error) {
	r.seq++
	id := newID(r.rec.Exercise, r.env.Now(), r.seq)
	args := js.args
	if js.runName {
		args = append(append([]string(nil), args...), "--run-name", id)
	}
	entry := "python train.py " + shellJoin(args)
	_, err := r.env.Ray.Submit(ctx, ray.SubmitRequest{
		Entrypoint: entry, SubmissionID: id, RuntimeEnv: r.runtime,
		Metadata:          map[string]string{"mltrain.exercise": r.rec.Exercise},
		EntrypointNumGPUs: js.gpus, EntrypointNumCPUs: js.cpus,
	})
	if err != nil {
		return 0, err
	}
	r.rec.Jobs = append(r.rec.Jobs, JobRun{SubmissionID: id, Entrypoint: entry, Status: ray.Pending,
		URL: r.env.Ray.Address() + "/#/jobs/" + id})
	r.say("submitted %s: %s", id, entry)
	return len(r.rec.Jobs) - 1, nil
}

// wait follows job i until it is terminal and fills its JobRun; a FAILED job
// is an error carrying its last 50 log lines.
func (r *runner) wait(ctx context.Context, i int) (ray.Job, error) {
	jr := &r.rec.Jobs[i]
	wctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	j, err := r.env.Ray.Wait(wctx, jr.SubmissionID, ray.WaitOptions{Poll: r.o.Poll, OnChange: func(j ray.Job) {
		r.say("%s: %s", jr.SubmissionID, j.Status)
	}})
	r.fill(ctx, i, j)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return j, clierr.Hintf("raise --timeout, or look at the job in the dashboard: "+jr.URL,
				"job %s still %s after %s", jr.SubmissionID, j.Status, r.o.Timeout)
		}
		return j, err
	}
	if j.Status == ray.Failed {
		logs, _ := r.env.Ray.Logs(ctx, jr.SubmissionID)
		return j, clierr.Hintf("open "+jr.URL+" for the whole log",
			"job %s FAILED (%s): %s\nlast log lines:\n%s", jr.SubmissionID, j.ErrorType, j.Message, LastLines(logs, 50))
	}
	return j, nil
}

// fill copies the job's state and what its log says into the record.
func (r *runner) fill(ctx context.Context, i int, j ray.Job) []Event {
	jr := &r.rec.Jobs[i]
	if j.Status != "" {
		jr.Status, jr.Message = j.Status, j.Message
		jr.Start, jr.End = j.Start(), j.End()
		jr.Seconds = j.Duration().Seconds()
	}
	logs, err := r.env.Ray.Logs(ctx, jr.SubmissionID)
	if err != nil {
		return nil
	}
	events, res := ParseLog(logs)
	if r.events == nil {
		r.events = map[int][]Event{}
	}
	r.events[i] = events
	jr.Result = res
	jr.NodeIPs = NodeIPs(events)
	names := workerNames(ctx, r.env.Engine, r.env.Project, jr.NodeIPs)
	jr.Containers = nil
	for _, ip := range jr.NodeIPs {
		if n, ok := names[ip]; ok {
			jr.Containers = append(jr.Containers, n)
		}
	}
	return events
}

func (r *runner) dashboard(path string) string { return r.env.Ray.Address() + path }

// shellJoin quotes args for the entrypoint (Ray runs it through a shell).
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+", c))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
