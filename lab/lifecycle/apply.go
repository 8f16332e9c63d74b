package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/nextstep"
)

// ensureImages makes every image the project's services run present:
// mltrain's own are built, the others pulled. flags names what replaces
// them on a host without a registry.
func ensureImages(ctx context.Context, eng docker.Engine, project *types.Project, rayVersion string, o images.Options, rep progress.Reporter, flags string) (images.Result, error) {
	var refs []string
	for _, name := range project.ServiceNames() {
		refs = append(refs, project.Services[name].Image)
	}
	req, err := dockerfiles.Request(rayVersion, refs)
	if err != nil {
		return images.Result{}, err
	}
	res, err := images.Ensure(ctx, eng, req, o, rep)
	if ue := (*images.UnavailableError)(nil); errors.As(err, &ue) {
		return res, clierr.WithHint(err, nextstep.PreloadHint(ue, flags))
	}
	if err != nil {
		return res, err
	}
	for _, w := range res.Warnings {
		progress.Warning(rep, w)
	}
	return res, nil
}

// applier applies a project and, when this is its first apply (no
// container of the project existed), rolls a failure back: the containers
// it made go, volumes stay.
type applier struct {
	eng        docker.Engine
	project    *types.Project
	rep        progress.Reporter
	firstUp    bool
	noRollback bool
	command    string // the command that re-runs, for the rollback note
	left       *leftBehind
}

func newApplier(ctx context.Context, eng docker.Engine, project *types.Project, rep progress.Reporter, noRollback bool, command string, left *leftBehind) (*applier, error) {
	before, err := eng.ContainerList(ctx, map[string]string{labels.Project: project.Name})
	if err != nil {
		return nil, err
	}
	return &applier{eng: eng, project: project, rep: rep, firstUp: len(before) == 0, noRollback: noRollback, command: command, left: left}, nil
}

func (a *applier) apply(ctx context.Context, stop, health time.Duration) (compose.Result, error) {
	if err := ctx.Err(); err != nil { // interrupted: start nothing
		return compose.Result{}, fmt.Errorf("before starting the lab's containers: %w", err)
	}
	a.left.applying = true
	// A failure is rolled back by the pipeline (run.rollback), as any
	// later step's is.
	return compose.Apply(ctx, a.eng, a.project, compose.ApplyOptions{
		Reporter: a.rep, WorkingDir: a.project.WorkingDir, ConfigFiles: a.project.ComposeFiles,
		StopTimeout: stop, HealthTimeout: health,
	})
}

// fail rolls a first apply back and returns err (joined with the
// rollback's own failure, if any).
func (a *applier) fail(ctx context.Context, err error) error {
	if !a.firstUp || a.noRollback {
		return err
	}
	// The caller's context may be what ended: roll back regardless.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if rerr := a.removeAll(rctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
	}
	a.left.rolledBack = true
	progress.Note(a.rep, fmt.Sprintf("rolled back: removed this first run's containers (volumes kept); '%s --no-rollback' keeps them for inspection", a.command))
	return err
}

// removeAll removes the project's containers until none is left: a create
// the engine received before an interrupt still completes after its client
// went away, so a container may appear after the first pass listed them.
func (a *applier) removeAll(ctx context.Context) error {
	for pass := 0; ; pass++ {
		if _, err := compose.Down(ctx, a.eng, a.project.Name, 5*time.Second, false, a.rep); err != nil {
			return err
		}
		left, err := a.eng.ContainerList(ctx, map[string]string{labels.Project: a.project.Name})
		if err != nil || len(left) == 0 {
			return err
		}
		if pass == 4 {
			return fmt.Errorf("%d container(s) of lab %q appeared again after removal", len(left), a.project.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
