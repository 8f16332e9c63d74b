package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ports"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// JoinRunOptions are `mltrain join`'s choices beside the plan's.
type JoinRunOptions struct {
	StateDir    state.Dir
	Bundle      plan.JoinBundle
	Join        plan.JoinOptions
	Images      images.Options
	Timeout     time.Duration // the wait for this host's nodes (default 10 minutes)
	StopTimeout time.Duration
	NoRollback  bool
	// RenderOnly writes compose.yaml and starts nothing.
	RenderOnly bool
	// Commands writes the commands notes and hints name: the user's lab and
	// join as they ran it (empty Ran reads as 'join BUNDLE').
	Commands nextstep.Commands
}

// Join adds this host's GPUs to the lab of o.Bundle: it plans one worker
// per GPU, makes the worker image present and checks it runs the lab's Ray
// and Python, proves before starting anything that the head and MinIO are
// reachable and the token is the lab's, starts the workers on the host
// network and waits until the head lists this host's nodes ALIVE with their
// GPUs. Like up it converges: a second join changes nothing.
func Join(ctx context.Context, d UpDeps, o JoinRunOptions) (Result, error) {
	if len(o.Commands.Ran) == 0 {
		o.Commands.Ran = []string{"join", "BUNDLE"}
	}
	r := &run{deps: d, dir: o.StateDir, images: o.Images, timeout: o.Timeout, stopTimeout: o.StopTimeout,
		noRollback: o.NoRollback, cmds: o.Commands,
		imageFlags: "give '" + o.Commands.Line("join") + "' a worker image this host already has: --image-worker REF"}
	return r.execute(ctx, joinSteps(o))
}

// joinSteps are join's: the shared pipeline with a plan of this host's
// workers for the bundle's lab, the head proven reachable before anything
// is written, the worker image's versions checked, and a wait for the head
// to list this host's nodes. --render-only stops after writing the files.
func joinSteps(o JoinRunOptions) []step {
	b := o.Bundle
	plan := step{name: "plan", run: func(_ context.Context, r *run) (string, error) {
		p, err := plan.NewJoin(r.facts, o.Join, b)
		if err != nil {
			return "", err
		}
		r.state = state.State{Project: p.Project, Plan: p, Probes: plan.Probes{Ray: b.DashboardURL(), MinIO: b.MinIO}}
		return r.planned(p), nil
	}}
	if o.RenderOnly {
		return []step{{name: "detect host", run: detectStep}, plan, {name: "write files", run: func(_ context.Context, r *run) (string, error) {
			files, err := render.Write(r.dir, r.plan)
			r.res.Files = files
			return strings.Join(files, ", "), err
		}}}
	}
	return []step{
		{name: "detect host", run: detectStep},
		plan,
		{name: "reach the head", run: func(ctx context.Context, r *run) (string, error) {
			return b.GCSAddress() + ", its dashboard and MinIO", checkHeadReachable(ctx, b, r.plan.NodeIP, r.cmds.Again())
		}},
		{name: "render", run: func(ctx context.Context, r *run) (string, error) {
			if err := r.dir.WriteJSON(state.JoinFile, b); err != nil {
				return "", err
			}
			return renderStep(ctx, r)
		}},
		{name: "check ports", run: portsStep},
		{name: "images", run: imagesStep},
		{name: "worker image versions", run: func(ctx context.Context, r *run) (string, error) {
			return fmt.Sprintf("Ray %s, Python %s", b.RayVersion, b.Python), checkImageVersions(ctx, r.deps.Engine, r.plan.Images[service.RoleWorker], b, r.deps.Reporter)
		}},
		{name: "data volume", run: dataStep},
		{name: "apply", run: applyStep},
		{name: "ready", run: func(ctx context.Context, r *run) (string, error) {
			rc, err := ray.New(ray.Options{Address: b.DashboardURL(), Token: b.RayToken, TokenSource: "the join bundle"})
			if err != nil {
				return "", err
			}
			if err := r.wait(ctx, []ready.Check{joinedNodes(rc, &r.plan, &r.res.Nodes)}); err != nil {
				return "", clierr.WithHint(err, firewallHint(b, r.plan.NodeIP, "the first host cannot reach this host's Ray ports, or", r.cmds.Again()))
			}
			return fmt.Sprintf("joined lab %s", b.Lab), nil
		}},
		{name: "save state", run: saveStep, keep: true},
	}
}

// firewallHint says which rule lets the two hosts talk: Ray's nodes talk on
// many ports both ways (and Torch/NCCL on ephemeral ones), so it is a rule
// for the pair of hosts, not a port list.
func firewallHint(b plan.JoinBundle, nodeIP, what, again string) string {
	return fmt.Sprintf("%s a firewall between the hosts blocks them: allow all TCP between %s (the lab's first host) and %s (this host), "+
		"e.g. on the first host 'sudo iptables -I INPUT -s %s -j ACCEPT' and here 'sudo iptables -I INPUT -s %s -j ACCEPT' "+
		"(or the cloud's security group), then run '%s' again", what, b.HeadIP, nodeIP, nodeIP, b.HeadIP, again)
}

// checkHeadReachable proves, before anything starts, that this host reaches
// the head's GCS and dashboard and MinIO, and that the head takes the
// bundle's token and runs the bundle's Ray.
func checkHeadReachable(ctx context.Context, b plan.JoinBundle, nodeIP, again string) error {
	mu, err := url.Parse(b.MinIO)
	if err != nil || mu.Host == "" {
		return clierr.Hintf(plan.BundleHint, "the join bundle's MinIO endpoint %q is not a URL", b.MinIO)
	}
	for _, t := range []struct{ what, addr string }{
		{"the head's GCS", b.GCSAddress()},
		{"the head's dashboard", net.JoinHostPort(b.HeadIP, strconv.Itoa(b.Dashboard))},
		{"the lab's MinIO", mu.Host},
	} {
		c, err := (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp", t.addr)
		if err != nil {
			return clierr.WithHint(fmt.Errorf("this host cannot reach %s at %s: %w", t.what, t.addr, err),
				firewallHint(b, nodeIP, "check the first host's lab is up ('"+nextstep.Commands{Lab: state.Lab{Project: b.Lab}}.Line("status")+"' there) and that", again))
		}
		c.Close()
	}
	rc, err := ray.New(ray.Options{Address: b.DashboardURL(), Token: b.RayToken, TokenSource: "the join bundle"})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := rc.Version(cctx)
	if err == nil {
		_, err = rc.Nodes(cctx)
	}
	if errors.Is(err, ray.ErrAuthInvalid) || errors.Is(err, ray.ErrAuthMissing) {
		return clierr.WithHint(fmt.Errorf("the lab's head at %s refuses the join bundle's Ray token: %w", b.DashboardURL(), err),
			"the lab was re-created since the bundle was made: run 'mltrain join-token' on its first host again and paste the new line")
	}
	if err != nil {
		return fmt.Errorf("ask the lab's head at %s: %w", b.DashboardURL(), err)
	}
	if v.RayVersion != "" && v.RayVersion != b.RayVersion {
		return clierr.Hintf("run 'mltrain join-token' on the first host again: the lab was re-created with another Ray",
			"the lab's head runs Ray %s, the join bundle says %s", v.RayVersion, b.RayVersion)
	}
	return nil
}

// checkImageVersions refuses a worker image whose Ray or Python is not the
// lab's: Ray refuses such a node, possibly only after it started.
func checkImageVersions(ctx context.Context, eng docker.Engine, ref string, b plan.JoinBundle, rep progress.Reporter) error {
	img, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspect worker image %s: %w", ref, err)
	}
	for _, m := range images.CompareVersions(img, images.Versions{Ray: b.RayVersion, Python: b.Python}) {
		if m.Got == "" {
			progress.Warning(rep, fmt.Sprintf("worker image %s does not say its %s version (no %s label): Ray will refuse its nodes if it is not %s", ref, m.What, m.Label, m.Want))
			continue
		}
		return clierr.Hintf(fmt.Sprintf("use the lab's: 'mltrain build --ray-version %s' here, or 'mltrain images save FILE' on the first host and 'mltrain images load FILE' here", b.RayVersion),
			"worker image %s has %s %s, the lab runs %s %s: Ray refuses nodes of another version", ref, m.What, m.Got, m.What, m.Want)
	}
	return nil
}

func hostNetworked(mode string) bool { return mode == "host" }

// checkHostPortsFree refuses a host-networked node whose pinned ports are
// taken: Ray does not fail then, it runs half-broken (an agent without its
// HTTP server). Containers of this project already running hold their own.
func checkHostPortsFree(ctx context.Context, eng docker.Engine, project string, p plan.Plan, onHost bool) error {
	if !onHost || p.Network != plan.NetworkHost {
		return nil // an override put the nodes elsewhere: their ports are not this host's
	}
	running, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return nil
	}
	type node struct {
		name  string
		ports []int
	}
	var nodes []node
	if hp := p.Head.Ports; hp != nil {
		nodes = append(nodes, node{service.HeadService, []int{p.Ports[service.PortGCS], p.Ports[service.PortDashboard], hp.NodeManager, hp.ObjectManager, hp.AgentGRPC,
			hp.AgentHTTP, hp.RuntimeEnvAgent, hp.Metrics, hp.ClientServer, hp.MinWorker, hp.MaxWorker}})
	}
	for _, w := range p.Workers {
		wp := w.Ports
		nodes = append(nodes, node{w.Service, []int{wp.NodeManager, wp.ObjectManager, wp.AgentGRPC, wp.AgentHTTP, wp.RuntimeEnvAgent, wp.Metrics, wp.MinWorker, wp.MaxWorker}})
	}
	for _, n := range nodes {
		for _, port := range n.ports {
			if ports.Free(p.NodeIP, port) != nil {
				return clierr.Hintf(fmt.Sprintf("find it with 'sudo ss -ltnp sport = :%d' and stop it, or have the lab use other ports: '%s' on the first host (and a new join-token)",
					port, nextstep.Commands{Lab: state.Lab{Project: project}}.Line("up", "--allow-join", "--ray-port-base", "N")),
					"port %d on %s, which %s's Ray node needs, is taken", port, p.NodeIP, n.name)
			}
		}
	}
	return nil
}

// joinedNodes waits until the head lists this host's nodes (at its node
// address) ALIVE, as many as it has workers, with their GPUs.
func joinedNodes(rc *ray.Client, p *plan.Plan, out *[]ray.Node) ready.Check {
	return ready.Check{Name: "joined", Run: func(ctx context.Context) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		nodes, err := rc.Nodes(cctx)
		if err != nil {
			return "", err
		}
		var mine []ray.Node
		gpus := 0.0
		for _, n := range nodes {
			if n.NodeIP == p.NodeIP && n.Alive() {
				mine = append(mine, n)
				gpus += n.GPUs()
			}
		}
		if len(mine) != len(p.Workers) || gpus != float64(len(p.Workers)) {
			return "", fmt.Errorf("the head lists %d of this host's %d nodes ALIVE at %s, with %g GPUs", len(mine), len(p.Workers), p.NodeIP, gpus)
		}
		*out = mine
		return fmt.Sprintf("%d node(s) at %s ALIVE in lab %s, %g GPU(s)", len(mine), p.NodeIP, p.Joined.Lab, gpus), nil
	}}
}
