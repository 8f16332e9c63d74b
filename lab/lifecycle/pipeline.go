// Package lifecycle is where the lab is brought up and changed: up and join
// (one pipeline of named steps, one rollback), down, starting and stopping
// workers, logs, render without starting, the lab's lock (one writer), and
// the readiness checks that prove a lab ready.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/state"
)

// `up` and `join` are one pipeline: a list of named steps run in order on
// one shared run, with one rollback and one result. They differ only in
// their plan and in the steps they list (upSteps, joinSteps); each step is
// reported the same way (start, then done with a few words, or failed).

// Result is what up or join did: the one shape both commands print.
type Result struct {
	Plan   plan.Plan      `json:"plan"`
	Files  []string       `json:"files,omitempty"` // written by join --render-only
	Images images.Result  `json:"images"`
	Apply  compose.Result `json:"apply"`
	// URLs are the lab's pages (none on a joined host: they are the first host's).
	URLs        plan.URLs        `json:"urls,omitzero"`
	Credentials plan.Credentials `json:"-"`
	// CredentialsCreated: this up generated the lab's secrets (the only
	// time they are printed unasked).
	CredentialsCreated bool `json:"credentials_created"`
	// FirstReady: no up had completed this lab before this one.
	FirstReady bool       `json:"first_ready"`
	BucketMade bool       `json:"bucket_created"`
	HasData    bool       `json:"dataset_loaded"`
	Nodes      []ray.Node `json:"nodes,omitempty"` // a joined host's nodes, as the head lists them
	StateDir   state.Dir  `json:"state_dir"`
}

// step is one named stage. run does the work and returns the few words of
// its done line.
type step struct {
	name string
	run  func(ctx context.Context, r *run) (string, error)
	// keep: a failure here rolls nothing back (the lab is up and proven;
	// only writing the record of it failed).
	keep bool
}

// run is what the steps share: the command's inputs, what earlier steps
// found, and the result being built.
type run struct {
	deps        UpDeps
	dir         state.Dir
	images      images.Options
	timeout     time.Duration // the readiness wait
	stopTimeout time.Duration
	noRollback  bool
	cmds        nextstep.Commands // the user's lab and command, named in re-run notes
	imageFlags  string            // what replaces images a host cannot get

	facts   host.Facts
	plan    plan.Plan
	state   state.State // what state.json records, from the plan on
	project *types.Project
	creds   plan.Credentials
	clients state.Clients
	// applier is set once the lab's containers are touched: a later
	// failure of a first run rolls them back through it.
	applier *applier
	// kept are a re-up's files as they were, put back by a failure before
	// the containers are touched.
	kept *keptFiles
	left leftBehind
	res  Result
}

// execute runs the steps in order. A step that fails after the containers
// were touched rolls a first run back; an interrupted run's error says what
// it leaves behind.
func (r *run) execute(ctx context.Context, steps []step) (Result, error) {
	if r.timeout == 0 {
		r.timeout = 10 * time.Minute
	}
	r.res.StateDir = r.dir
	err := r.steps(ctx, steps)
	if err != nil && ctx.Err() != nil {
		err = clierr.WithHint(err, r.left.String())
	}
	return r.res, err
}

func (r *run) steps(ctx context.Context, steps []step) error {
	rep := r.deps.Reporter
	for _, s := range steps {
		if err := ctx.Err(); err != nil { // interrupted: start no further step
			return r.rollback(ctx, s, fmt.Errorf("interrupted before %s: %w", s.name, err))
		}
		progress.Begin(rep, s.name, "")
		msg, err := s.run(ctx, r)
		if err != nil {
			progress.Failed(rep, s.name, err)
			return r.rollback(ctx, s, err)
		}
		progress.End(rep, s.name, msg)
	}
	return nil
}

func (r *run) rollback(ctx context.Context, s step, err error) error {
	if s.keep {
		return err
	}
	if r.applier == nil {
		// No container touched: a re-up leaves the lab's files as it found them.
		if r.kept != nil {
			if rerr := r.kept.restore(); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	}
	return r.applier.fail(ctx, err)
}

// The steps up and join share.

func detectStep(ctx context.Context, r *run) (string, error) {
	facts, err := r.deps.Detect(ctx)
	if err != nil {
		return "", err
	}
	r.facts = facts
	return fmt.Sprintf("%d GPU(s), %d CPUs, %s", len(facts.GPUs.GPUs), facts.CPUs, progress.Bytes(facts.MemoryBytes)), nil
}

// planned reports the plan's warnings and says what it is.
func (r *run) planned(p plan.Plan) string {
	r.plan, r.res.Plan = p, p
	for _, w := range p.Warnings {
		progress.Warning(r.deps.Reporter, w)
	}
	return fmt.Sprintf("%s mode, %d worker(s)", p.Mode, len(p.Workers))
}

// renderStep writes compose.yaml from the plan, keeping the files it
// replaces until the lab's containers are touched.
func renderStep(ctx context.Context, r *run) (string, error) {
	kept, err := keepFiles(r.dir, r.plan)
	if err != nil {
		return "", err
	}
	r.kept = kept
	rendered, err := render.Render(ctx, r.dir, r.plan)
	if err != nil {
		return "", err
	}
	r.project = rendered.Project
	return r.dir.File(compose.ComposeFile), nil
}

// portsStep refuses, before anything starts, host ports that are taken.
func portsStep(ctx context.Context, r *run) (string, error) {
	if err := checkPortsFree(ctx, r.deps.Engine, r.project, r.plan.Ports, r.movedPorts(), r.cmds.Again()); err != nil {
		return "", err
	}
	node := r.plan.Services()[0] // the head, or a joined host's first worker
	if err := checkHostPortsFree(ctx, r.deps.Engine, r.project.Name, r.plan, hostNetworked(r.project.Services[node].NetworkMode)); err != nil {
		return "", err
	}
	return "free", nil
}

func imagesStep(ctx context.Context, r *run) (string, error) {
	res, err := ensureImages(ctx, r.deps.Engine, r.project, r.plan.RayVersion, r.images, r.deps.Reporter, r.imageFlags)
	r.res.Images = res
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d present, %d pulled, %d built, %d up to date",
		len(res.Present), len(res.Pulled), len(res.Built), len(res.UpToDate)), nil
}

// dataStep comes after the images: a host that cannot have them is left
// without a volume it did not ask for.
func dataStep(ctx context.Context, r *run) (string, error) {
	loaded, err := ensureDataVolume(ctx, r.deps.Engine, r.plan, r.deps.Reporter, r.cmds)
	if err != nil {
		return "", err
	}
	r.res.HasData = loaded
	if !loaded {
		return r.plan.DataVolume + ": no dataset yet", nil
	}
	return r.plan.DataVolume + ": Food-11 loaded", nil
}

// applyStep records the plan in state.json as the lab's containers are
// first touched: state.json is the one record of which services the lab has
// (status reads it; compose.yaml is derived from the plan), and a run refused
// before this point leaves no lab behind. UpAt stays zero until the lab is
// proven ready.
func applyStep(ctx context.Context, r *run) (string, error) {
	if err := r.dir.SaveState(r.state); err != nil {
		return "", err
	}
	ap, err := newApplier(ctx, r.deps.Engine, r.project, r.deps.Reporter, r.noRollback, r.cmds.Again(), &r.left)
	if err != nil {
		return "", err
	}
	r.applier = ap
	res, err := ap.apply(ctx, r.stopTimeout, r.timeout)
	r.res.Apply = res
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d created, %d recreated, %d started, %d unchanged",
		len(res.Created), len(res.Recreated), len(res.Started), len(res.Unchanged)), nil
}

// wait waits for checks, as every service's readiness is reported.
func (r *run) wait(ctx context.Context, checks []ready.Check) error {
	return ready.Wait(ctx, r.deps.Engine, r.project.Name, checks, r.timeout, r.deps.Reporter)
}

// saveStep marks the record the lab proven ready.
func saveStep(_ context.Context, r *run) (string, error) {
	r.state.UpAt = time.Now().UTC()
	if err := r.dir.SaveState(r.state); err != nil {
		return "", err
	}
	return r.dir.File(state.StateFile), nil
}

// leftBehind is what a run stopped part way has left in place.
type leftBehind struct {
	applying   bool // containers were being created or started
	rolledBack bool // ... and this first run's were removed again
}

func (l leftBehind) String() string {
	switch {
	case l.rolledBack:
		return "rolled back: this first up's containers were removed; its volumes and the state dir's credentials and compose.yaml are kept"
	case l.applying:
		return "the lab's containers are kept as they were left, some perhaps not ready"
	}
	return "no container was started; the state dir's credentials and compose.yaml are kept"
}

// movedPorts are the plan's host ports that the lab's recorded plan (the
// state.json this run found) did not publish.
func (r *run) movedPorts() map[int]bool {
	var prev state.State
	if err := r.dir.ReadJSON(state.StateFile, &prev); err != nil {
		return nil // a first run: no container to recreate
	}
	was := map[int]bool{}
	for _, p := range prev.Plan.Ports {
		was[p] = true
	}
	moved := map[int]bool{}
	for _, p := range r.plan.Ports {
		if !was[p] {
			moved[p] = true
		}
	}
	return moved
}
