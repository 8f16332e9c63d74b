// Package exercise runs the lab's scripted exercises against a Ray cluster:
// it submits the workspace as a Ray job with the flags that replace the
// course's git branches, watches what the cluster does, measures it, and says
// whether the cluster behaved as the lesson expects. Each run leaves a Record
// in the state directory for `mltrain verify`.
package exercise

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Env is everything an exercise talks to; the command layer fills it.
type Env struct {
	Ray       *ray.Client
	Store     *store.Client // needed by fault (checkpoints); optional elsewhere
	Engine    docker.Engine // needed by fault (stop/start a worker); optional elsewhere
	Project   string        // compose project of the lab's containers
	NodeIP    string        // this host's node address when the lab's nodes span hosts
	StateDir  state.Dir     // records go to <StateDir>/exercises/<name>.json
	Workspace string        // submitted as working_dir; default <StateDir>/workspace
	Bucket    string        // checkpoint bucket; default "ray"
	// JobEnv is added to the job's runtime_env env_vars (over runtime.json's),
	// e.g. MLTRAIN_ACCELERATOR=cpu for a CPU rehearsal.
	JobEnv   map[string]string
	Reporter progress.Reporter
	Now      func() time.Time
	// Commands writes the command lines hints name, for the lab the user
	// chose (its --project and --state-dir).
	Commands nextstep.Commands
	// Mode is the lab's (CPU rehearsal, shared GPU), when its plan is known.
	Mode plan.Mode
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
	// Resume names the Ray Train run that multi continues (train.py
	// --run-name RUN with the same storage path s3://ray), e.g. one brought
	// back by 'mltrain restore'; "" starts a run of its own.
	Resume string
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

// ErrNotObserved is returned (wrapped) when an exercise ran but the cluster
// did not behave as the lesson expects.
var ErrNotObserved = errors.New("expected behaviour not observed")

// Run runs one exercise by name and saves its record (when it got far enough
// to have one). The error is non-nil unless the expected behaviour was seen:
// the run went through and the exercise's Judge found nothing wanting.
func Run(ctx context.Context, env Env, name string, o Options) (Record, error) {
	ex, ok := Lookup(name)
	if !ok {
		return Record{}, clierr.WithCode(clierr.Hintf("run '"+env.Commands.Line("lab", "guide")+"' to see the exercises",
			"unknown exercise %q (exercises: %s, all, guide)", name, strings.Join(Names(), ", ")), clierr.ExitUsage)
	}
	if env.Ray == nil {
		return Record{}, clierr.Hintf("set RAY_ADDRESS or run '"+env.Commands.Line("up")+"'", "exercise %s: no Ray dashboard to talk to", name)
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Bucket == "" {
		env.Bucket = store.DefaultBucket
	}
	if err := checkResume(ctx, env, name, o.Resume); err != nil {
		return Record{}, err
	}
	r := &runner{env: env, o: o.withDefaults(), ex: ex, rec: Record{Exercise: name, Quick: o.Quick, FakeData: o.FakeData,
		Rehearsal: env.Mode == plan.ModeCPU, SharedGPU: env.Mode == plan.ModeShared, RayAddress: env.Ray.Address()}}
	r.rec.Expected = ex.Expected
	r.rec.Started = env.Now()
	step := "lab " + name
	progress.Begin(env.Reporter, step, ex.Title)
	err := r.start(ctx)
	if err == nil {
		err = ex.run(ctx, r)
	}
	if err == nil {
		r.rec.Problems = append(r.rec.Problems, ex.Judge(r.rec)...)
		if len(r.rec.Problems) > 0 {
			err = r.notObserved()
		}
	}
	r.rec.Finished = env.Now()
	if err != nil && ctx.Err() != nil {
		err = r.interrupted(ctx, err)
	}
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
	names := Names()
	for _, n := range names {
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
		return recs, clierr.Hintf("run the failed exercises one by one: "+env.Commands.Line("lab", failed[0]),
			"%d of %d exercises did not behave as expected: %s: %w", len(failed), len(names), strings.Join(failed, ", "), ErrNotObserved)
	}
	return recs, nil
}
