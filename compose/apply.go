package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/compose-spec/compose-go/v2/graph"
	"github.com/compose-spec/compose-go/v2/types"
	"golang.org/x/sync/errgroup"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// ApplyOptions tunes Apply.
type ApplyOptions struct {
	Reporter progress.Reporter
	// ConfigFiles and WorkingDir go into compose's labels so
	// `docker compose -p <project>` finds the files mltrain wrote.
	ConfigFiles []string
	WorkingDir  string
	// StopTimeout is how long a container gets after SIGTERM when it is
	// recreated or removed (Ray needs a few seconds to leave the cluster).
	StopTimeout time.Duration
	// HealthTimeout bounds each wait for a dependency to become healthy.
	HealthTimeout time.Duration
}

// Result says what Apply did to each service's container.
type Result struct {
	Created   []string `json:"created"`   // new containers
	Recreated []string `json:"recreated"` // config changed: replaced
	Started   []string `json:"started"`   // existed unchanged but were stopped
	Unchanged []string `json:"unchanged"` // left alone
	Removed   []string `json:"removed"`   // orphans: services no longer in the project
}

func (r *Result) add(list *[]string, name string, mu *sync.Mutex) {
	mu.Lock()
	*list = append(*list, name)
	sort.Strings(*list)
	mu.Unlock()
}

// Apply makes the engine match the project: networks and volumes exist,
// every service has one container with the current config hash, running;
// containers whose hash is unchanged are left alone, so a second Apply is a
// no-op. Services start in depends_on order, independent ones in parallel, and
// a service_healthy dependency is waited for (failing fast, with its logs,
// when it exits or turns unhealthy).
func Apply(ctx context.Context, eng docker.Engine, p *types.Project, o ApplyOptions) (Result, error) {
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	if o.HealthTimeout == 0 {
		o.HealthTimeout = 5 * time.Minute
	}
	var res Result
	var mu sync.Mutex
	if err := ensureNetworksAndVolumes(ctx, eng, p, o.Reporter); err != nil {
		return res, err
	}
	removed, err := removeOrphans(ctx, eng, p, o)
	if err != nil {
		return res, err
	}
	res.Removed = removed

	needHealthy := map[string]string{} // service -> condition its dependents need
	for _, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionHealthy || needHealthy[dep] == "" {
				needHealthy[dep] = d.Condition
			}
		}
	}

	ready, err := prepareAll(ctx, eng, p, o)
	if err != nil {
		return res, err
	}

	// compose-go's walker marks a failed service visited and may still visit
	// its dependents before the failure cancels the walk: a dependent whose
	// dependency failed must never start.
	failed := map[string]bool{}
	err = graph.InDependencyOrder(ctx, p, func(ctx context.Context, name string, s types.ServiceConfig) error {
		mu.Lock()
		for dep := range s.DependsOn {
			if failed[dep] {
				failed[name] = true
			}
		}
		skip := failed[name]
		mu.Unlock()
		if skip || ctx.Err() != nil {
			return nil // the failure that stopped the walk is reported by its own service
		}
		step := "service " + name
		progress.Begin(o.Reporter, step, "")
		action, err := startService(ctx, eng, p, s, ready[name])
		if err != nil {
			mu.Lock()
			failed[name] = true
			mu.Unlock()
			progress.Failed(o.Reporter, step, err)
			return err
		}
		switch action {
		case "created":
			res.add(&res.Created, name, &mu)
		case "recreated":
			res.add(&res.Recreated, name, &mu)
		case "started":
			res.add(&res.Started, name, &mu)
		default:
			res.add(&res.Unchanged, name, &mu)
		}
		switch needHealthy[name] {
		case types.ServiceConditionHealthy:
			progress.Say(o.Reporter, step, "waiting until healthy (a dependency of other services)")
			rs := &Restarts{Say: func(l string) { progress.Say(o.Reporter, step, l) }}
			if err := rs.WaitHealthy(ctx, eng, ContainerName(p, s), o.HealthTimeout); err != nil {
				mu.Lock()
				failed[name] = true
				mu.Unlock()
				progress.Failed(o.Reporter, step, err)
				return err
			}
		case types.ServiceConditionCompletedSuccessfully:
			if err := waitExited0(ctx, eng, ContainerName(p, s), o.HealthTimeout); err != nil {
				mu.Lock()
				failed[name] = true
				mu.Unlock()
				progress.Failed(o.Reporter, step, err)
				return err
			}
		}
		progress.End(o.Reporter, step, action)
		return nil
	})
	return res, err
}

func ensureNetworksAndVolumes(ctx context.Context, eng docker.Engine, p *types.Project, rep progress.Reporter) error {
	nets := map[string]bool{}
	for _, s := range p.Services {
		if s.NetworkMode == "" {
			for _, k := range serviceNetworks(s) {
				nets[k] = true
			}
		}
	}
	for k := range nets {
		n := p.Networks[k]
		name := NetworkName(p, k)
		if n.External {
			continue
		}
		lbl := maps.Clone(map[string]string(n.Labels))
		if lbl == nil {
			lbl = map[string]string{}
		}
		lbl[labels.Project], lbl[labels.Network], lbl[labels.Version], lbl[labels.ManagedBy] = p.Name, k, labels.ComposeVersion, labels.ManagedByValue
		if err := ensureNetwork(ctx, eng, p.Name, k, name, lbl, rep); err != nil {
			return err
		}
	}
	for k, v := range p.Volumes {
		if v.External {
			continue
		}
		lbl := maps.Clone(map[string]string(v.Labels))
		if lbl == nil {
			lbl = map[string]string{}
		}
		lbl[labels.Project], lbl[labels.Volume], lbl[labels.Version], lbl[labels.ManagedBy] = p.Name, k, labels.ComposeVersion, labels.ManagedByValue
		created, err := eng.VolumeEnsure(ctx, VolumeName(p, k), lbl)
		if err != nil {
			return err
		}
		if created {
			progress.Note(rep, "created volume "+VolumeName(p, k))
		}
	}
	return nil
}

// removeOrphans removes the project's containers whose service is gone
// (e.g. after `up --workers 1` following a 2-worker lab).
func removeOrphans(ctx context.Context, eng docker.Engine, p *types.Project, o ApplyOptions) ([]string, error) {
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: p.Name})
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, c := range list {
		svc := c.Labels[labels.Service]
		if _, ok := p.Services[svc]; ok || c.Labels[labels.Oneoff] == "True" {
			continue
		}
		if err := eng.ContainerStop(ctx, c.ID, o.StopTimeout); err != nil {
			return removed, err
		}
		if err := eng.ContainerRemove(ctx, c.ID, true); err != nil {
			return removed, err
		}
		progress.Note(o.Reporter, fmt.Sprintf("removed %s (service %s is no longer in the lab)", c.Name, svc))
		removed = append(removed, c.Name)
	}
	return removed, nil
}

// ConfigHash is the hash of what a service's container is created from: the
// service definition and the image's ID (a rebuilt image recreates it).
func ConfigHash(s types.ServiceConfig, imageID string) (string, error) {
	s.DependsOn = nil // ordering, not configuration
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("hash service %s: %w", s.Name, err)
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte(imageID))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// prepared is a service's container made ready to start: created (or
// recreated) when its config changed, found otherwise.
type prepared struct {
	id      string
	action  string // created, recreated, or "" (it existed unchanged)
	running bool
}

// prepareService makes the service's container exist with its current
// config hash, without starting it: creating containers costs the engine
// about as much as starting them, and doing it for every service at once,
// before the dependency walk, takes it off the walk's critical path.
func prepareService(ctx context.Context, eng docker.Engine, p *types.Project, s types.ServiceConfig, o ApplyOptions) (prepared, error) {
	img, err := eng.ImageInspect(ctx, s.Image)
	if docker.IsNotFound(err) {
		return prepared{}, clierr.Mark(fmt.Errorf("service %s: image %s is not on this host: %w", s.Name, s.Image, err), ErrImageMissing)
	}
	if err != nil {
		return prepared{}, fmt.Errorf("service %s: %w", s.Name, err)
	}
	hash, err := ConfigHash(s, img.ID)
	if err != nil {
		return prepared{}, err
	}
	name := ContainerName(p, s)
	lbl := maps.Clone(map[string]string(s.Labels))
	if lbl == nil {
		lbl = map[string]string{}
	}
	deps := make([]string, 0, len(s.DependsOn))
	for d, c := range s.DependsOn {
		deps = append(deps, fmt.Sprintf("%s:%s:%t", d, c.Condition, c.Restart))
	}
	sort.Strings(deps)
	maps.Copy(lbl, map[string]string{
		labels.Project: p.Name, labels.Service: s.Name, labels.Number: "1", labels.Oneoff: "False",
		labels.ConfigHash: hash, labels.Version: labels.ComposeVersion, labels.Image: img.ID,
		labels.DependsOn: strings.Join(deps, ","), labels.ManagedBy: labels.ManagedByValue,
		labels.WorkingDir: o.WorkingDir, labels.ConfigFiles: strings.Join(o.ConfigFiles, ","),
	})

	action := "created"
	cur, err := eng.ContainerInspect(ctx, name)
	switch {
	case err == nil:
		if cur.Labels[labels.Project] != p.Name {
			return prepared{}, clierr.WithHint(fmt.Errorf("service %s: a container named %s exists and is not part of lab %q", s.Name, name, p.Name),
				fmt.Sprintf("remove it ('docker rm -f %s') or choose another lab name with --project", name))
		}
		if cur.Labels[labels.ConfigHash] == hash {
			return prepared{id: cur.ID, running: cur.Running}, nil
		}
		if err := eng.ContainerStop(ctx, cur.ID, o.StopTimeout); err != nil {
			return prepared{}, err
		}
		if err := eng.ContainerRemove(ctx, cur.ID, true); err != nil {
			return prepared{}, err
		}
		action = "recreated"
	case !docker.IsNotFound(err):
		return prepared{}, err
	}
	spec, err := ToSpec(p, s, lbl)
	if err != nil {
		return prepared{}, err
	}
	id, err := eng.ContainerCreate(ctx, spec)
	if err != nil {
		return prepared{}, fmt.Errorf("service %s: %w", s.Name, err)
	}
	return prepared{id: id, action: action}, nil
}

// prepareAll prepares every service's container, a few at a time.
func prepareAll(ctx context.Context, eng docker.Engine, p *types.Project, o ApplyOptions) (map[string]prepared, error) {
	out := map[string]prepared{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		g.Go(func() error {
			pr, err := prepareService(gctx, eng, p, s, o)
			if err != nil {
				return err
			}
			mu.Lock()
			out[name] = pr
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// startService starts a prepared container and says what was done.
func startService(ctx context.Context, eng docker.Engine, p *types.Project, s types.ServiceConfig, pr prepared) (string, error) {
	if pr.running {
		return "unchanged", nil
	}
	if err := eng.ContainerStart(ctx, pr.id); err != nil {
		return "", explainStart(s, ContainerName(p, s), err)
	}
	if pr.action == "" {
		return "started", nil
	}
	return pr.action, nil
}

// explainStart turns the engine's most common start failures into what to do.
func explainStart(s types.ServiceConfig, name string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use"):
		return clierr.Mark(fmt.Errorf("service %s: a host port it publishes is taken: %w", s.Name, err), ErrPortTaken)
	case strings.Contains(msg, "could not select device driver") || strings.Contains(msg, "nvidia"):
		return clierr.Mark(fmt.Errorf("service %s: the engine cannot give the container its GPU: %w", s.Name, err), ErrNoGPURuntime)
	}
	return fmt.Errorf("start %s: %w", name, err)
}
