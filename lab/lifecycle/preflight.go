package lifecycle

import (
	"context"
	"fmt"
	"strconv"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ports"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
)

// ensureDataVolume makes sure the dataset volume exists (it is external to
// the project so `down --volumes` never takes the dataset) and warns, with
// the command to run, when Food-11 is not loaded in it yet.
func ensureDataVolume(ctx context.Context, eng docker.Engine, p plan.Plan, rep progress.Reporter, c nextstep.Commands) (loaded bool, err error) {
	if _, err := eng.VolumeEnsure(ctx, p.DataVolume, map[string]string{food11.LabelDataset: "food11"}); err != nil {
		return false, err
	}
	m, err := food11.ReadManifest(ctx, eng, food11.VerifyOptions{Volume: p.DataVolume})
	if err != nil {
		return false, fmt.Errorf("check dataset volume %s: %w", p.DataVolume, err)
	}
	if m == nil {
		here := ""
		if p.Joined != nil {
			here = " on this host (each host's workers read their own copy)"
		}
		progress.Warning(rep, fmt.Sprintf("volume %s holds no Food-11 dataset yet: run '%s'%s before training", p.DataVolume, c.Line("data", "food11", "--volume", p.DataVolume), here))
	}
	return m != nil, nil
}

// checkPortsFree fails before anything starts when a host port the lab
// publishes is held by something else, naming the holder and the --port
// flag that moves the lab's port (names are the plan's port names).
// moved are the host ports this run publishes that the lab's recorded plan
// did not: a service whose container exists is recreated on them, so they
// are checked too.
func checkPortsFree(ctx context.Context, eng docker.Engine, p *types.Project, named map[string]int, moved map[int]bool, again string) error {
	all, err := eng.ContainerList(ctx, nil)
	if err != nil {
		return err
	}
	// A service that has a container already (running, or left created by an
	// interrupted up) is the engine's to start: its port may be bound by the
	// engine for it even before it shows as published.
	have := map[string]bool{}
	for _, c := range all {
		if c.Labels[labels.Project] == p.Name {
			have[c.Labels[labels.Service]] = true
		}
	}
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		for _, pc := range s.Ports {
			port, err := strconv.Atoi(pc.Published)
			if err != nil {
				continue // ranges are checked by compose.CheckPorts
			}
			if have[name] && !moved[port] {
				continue
			}
			holder, held := ports.Holder(all, port)
			if held && holder.Labels[labels.Project] == p.Name {
				continue
			}
			move := movePortHint(named, port)
			if held {
				return clierr.Hintf(fmt.Sprintf("stop it ('docker stop %s')%s, then '%s'", holder.Name, move, again),
					"host port %d (service %s) is held by container %s", port, name, holder.Name)
			}
			if err := ports.Free(pc.HostIP, port); err != nil {
				return clierr.Hintf(fmt.Sprintf("find it with 'sudo ss -ltnp sport = :%d' and stop it%s, then '%s'", port, move, again),
					"host port %d (service %s) is in use by another process on this host: %v", port, name, err)
			}
		}
	}
	return nil
}

// movePortHint names the flag that publishes the lab's port elsewhere.
func movePortHint(named map[string]int, port int) string {
	for name, p := range named {
		if p == port {
			return fmt.Sprintf(", or move the lab's port with --port %s=PORT", name)
		}
	}
	return ""
}
