package compose

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// Down removes the project's containers (dependents first) and its networks.
// Volumes are removed only when removeVolumes is set.
func Down(ctx context.Context, eng docker.Engine, project string, stopTimeout time.Duration, removeVolumes bool, rep progress.Reporter) ([]string, error) {
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return nil, err
	}
	// Stop in reverse dependency order as recorded on the containers: a
	// container that others depend on stops after them.
	dependedOn := map[string]bool{}
	for _, c := range list {
		for _, d := range strings.Split(c.Labels[labels.DependsOn], ",") {
			if svc, _, ok := strings.Cut(d, ":"); ok {
				dependedOn[svc] = true
			}
		}
	}
	var removed []string
	var errs []error
	for _, wave := range []bool{false, true} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range list {
			if dependedOn[c.Labels[labels.Service]] != wave {
				continue
			}
			wg.Add(1)
			go func(c docker.Container) {
				defer wg.Done()
				step := "remove " + c.Name
				progress.Begin(rep, step, "")
				err := eng.ContainerStop(ctx, c.ID, stopTimeout)
				if err == nil {
					err = eng.ContainerRemove(ctx, c.ID, true)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					progress.Failed(rep, step, err)
					errs = append(errs, err)
					return
				}
				progress.End(rep, step, "")
				removed = append(removed, c.Name)
			}(c)
		}
		wg.Wait()
	}
	if len(errs) > 0 {
		return removed, errors.Join(errs...)
	}
	sort.Strings(removed)
	if err := removeLabelled(ctx, eng, project, removeVolumes, rep); err != nil {
		return removed, err
	}
	return removed, nil
}

func removeLabelled(ctx context.Context, eng docker.Engine, project string, removeVolumes bool, rep progress.Reporter) error {
	// By ID: two networks of one name (left by an older mltrain) are both
	// the project's, and the name alone is ambiguous to the engine.
	nets, err := eng.NetworkList(ctx, "", map[string]string{labels.Project: project})
	if err != nil {
		return err
	}
	for _, n := range nets {
		if err := eng.NetworkRemove(ctx, n.ID); err != nil {
			return err
		}
	}
	if !removeVolumes {
		return nil
	}
	vols, err := eng.VolumeList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return err
	}
	for _, v := range vols {
		if err := eng.VolumeRemove(ctx, v.Name); err != nil {
			return err
		}
		progress.Note(rep, "removed volume "+v.Name)
	}
	return nil
}
