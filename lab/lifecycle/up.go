// Package lifecycle runs the lab's sequences on the engine: Up (detect, plan,
// render, images, apply, prove ready, bucket, URLs), Down, Status, worker
// stop/start. It sits above lab (the plan) and compose (rendering and apply).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/ready"
)

// UpOptions are `mltrain up`'s choices.
type UpOptions struct {
	StateDir string
	Lab      lab.Options
	Images   images.Options // pull policy, rebuild
	// Timeout bounds the readiness wait (default 10 minutes).
	Timeout time.Duration
	// NoRollback keeps the containers of a failed first up for inspection.
	NoRollback bool
	// StopTimeout is the grace period of containers being replaced.
	StopTimeout time.Duration
}

// Deps are Up's ways to reach the world; tests replace Detect.
type Deps struct {
	Engine   docker.Engine
	Reporter progress.Reporter
	// Detect returns the host's facts (GPUs, CPUs, memory, address).
	Detect func(ctx context.Context) (host.Facts, error)
	// PopulateWorkspace writes the students' workspace into dir when it is
	// empty (nil: leave it as it is).
	PopulateWorkspace func(dir string) error
}

// UpResult is what `mltrain up` prints.
type UpResult struct {
	Plan        lab.Plan        `json:"plan"`
	Apply       compose.Result  `json:"apply"`
	Images      images.Result   `json:"images"`
	URLs        URLs            `json:"urls"`
	Credentials lab.Credentials `json:"-"`
	BucketMade  bool            `json:"bucket_created"`
	StateDir    string          `json:"state_dir"`
}

// Up brings the lab up and proves it ready. A failed first up (no lab
// containers existed before) removes the containers it made unless
// NoRollback; volumes are never removed by a rollback.
func Up(ctx context.Context, d Deps, o UpOptions) (UpResult, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	var res UpResult
	res.StateDir = o.StateDir
	rep := d.Reporter

	progress.Begin(rep, "detect host", "")
	facts, err := d.Detect(ctx)
	if err != nil {
		progress.Failed(rep, "detect host", err)
		return res, err
	}
	progress.End(rep, "detect host", fmt.Sprintf("%d GPU(s), %d CPUs, %s", len(facts.GPUs.GPUs), facts.CPUs, lab.HumanBytes(facts.MemoryBytes)))

	creds, err := lab.LoadOrCreateCredentials(o.StateDir)
	if err != nil {
		return res, err
	}
	res.Credentials = creds
	plan, err := lab.NewPlan(facts, o.Lab, creds)
	if err != nil {
		return res, err
	}
	res.Plan = plan
	for _, w := range plan.Warnings {
		progress.Warning(rep, w)
	}

	if _, err := compose.Write(o.StateDir, plan); err != nil {
		return res, err
	}
	if d.PopulateWorkspace != nil {
		if err := d.PopulateWorkspace(workspaceDir(o.StateDir, plan)); err != nil {
			return res, err
		}
	}
	project, err := compose.Load(ctx, o.StateDir)
	if err != nil {
		return res, err
	}
	if err := compose.CheckPorts(project); err != nil {
		return res, err
	}
	if err := checkPortsFree(ctx, d.Engine, project, plan.Ports); err != nil {
		return res, err
	}
	if err := ensureDataVolume(ctx, d.Engine, plan, rep); err != nil {
		return res, err
	}

	var refs []string
	for _, name := range project.ServiceNames() {
		refs = append(refs, project.Services[name].Image)
	}
	req, err := images.RequestFor(plan.RayVersion, refs)
	if err != nil {
		return res, err
	}
	imgRes, err := images.Ensure(ctx, d.Engine, req, o.Images, rep)
	res.Images = imgRes
	if err != nil {
		return res, err
	}
	for _, w := range imgRes.Warnings {
		progress.Warning(rep, w)
	}

	before, err := d.Engine.ContainerList(ctx, map[string]string{compose.LabelProject: project.Name})
	if err != nil {
		return res, err
	}
	firstUp := len(before) == 0
	fail := func(err error) (UpResult, error) {
		if !firstUp || o.NoRollback {
			return res, err
		}
		// The caller's context may be what ended: roll back regardless.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if _, rerr := compose.Down(rctx, d.Engine, project.Name, 5*time.Second, false, rep); rerr != nil {
			return res, errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		progress.Note(rep, "rolled back: removed this first up's containers (volumes kept); 'mltrain up --no-rollback' keeps them for inspection")
		return res, err
	}

	res.Apply, err = compose.Apply(ctx, d.Engine, project, compose.ApplyOptions{
		Reporter: rep, WorkingDir: project.WorkingDir, ConfigFiles: project.ComposeFiles,
		StopTimeout: o.StopTimeout, HealthTimeout: o.Timeout,
	})
	if err != nil {
		return fail(err)
	}

	res.URLs = MakeURLs(plan)
	probes := probeAddrs(plan)
	checks, err := readyChecks(plan, creds, o.StateDir)
	if err != nil {
		return fail(err)
	}
	if err := ready.Wait(ctx, d.Engine, project.Name, checks, o.Timeout, rep); err != nil {
		return fail(err)
	}

	sc, err := store.New(store.Config{Endpoint: probes.MinIO, AccessKey: creds.MinIOAccessKey, SecretKey: creds.MinIOSecretKey})
	if err != nil {
		return fail(err)
	}
	made, err := sc.EnsureBucket(ctx, store.DefaultBucket)
	if err != nil {
		return fail(err)
	}
	res.BucketMade = made
	if err := SaveState(o.StateDir, State{Project: plan.Project, Plan: plan, URLs: res.URLs, Probes: probes, UpAt: time.Now().UTC()}); err != nil {
		return res, err
	}
	return res, nil
}

// readyChecks are the probes that prove the lab ready: Ray sees the head and
// every worker with its GPU (with the token), and every service answers.
func readyChecks(plan lab.Plan, creds lab.Credentials, stateDir string) ([]ready.Check, error) {
	probes := probeAddrs(plan)
	rc, err := ray.New(ray.Options{Address: probes.Ray, Token: creds.RayAuthToken, TokenSource: credsPath(stateDir)})
	if err != nil {
		return nil, err
	}
	return []ready.Check{
		ready.RayCluster(rc, len(plan.Workers), expectedGPUs(plan)),
		ready.HTTP("minio", probes.MinIO+"/minio/health/ready", nil),
		ready.HTTP("grafana", probes.Grafana+"/api/health", nil),
		ready.HTTP("prometheus", probes.Prometheus+"/-/ready", nil),
		ready.HTTP("jupyter", probes.Jupyter+"/api", http.Header{"Authorization": {"token " + creds.JupyterToken}}),
	}, nil
}

func credsPath(stateDir string) string { return filepath.Join(stateDir, lab.CredentialsFile) }

func workspaceDir(stateDir string, p lab.Plan) string {
	if filepath.IsAbs(p.Workspace) {
		return p.Workspace
	}
	return filepath.Join(stateDir, p.Workspace)
}

func expectedGPUs(p lab.Plan) float64 {
	// Every worker advertises one GPU: its own, its half of a shared one (as
	// one logical GPU each), or a logical one in CPU rehearsal.
	return float64(len(p.Workers))
}

// ensureDataVolume makes sure the dataset volume exists (it is external to
// the project so `down --volumes` never takes the dataset) and warns, with
// the command to run, when Food-11 is not loaded in it yet.
func ensureDataVolume(ctx context.Context, eng docker.Engine, p lab.Plan, rep progress.Reporter) error {
	if _, err := eng.VolumeEnsure(ctx, p.DataVolume, map[string]string{food11.LabelDataset: "food11"}); err != nil {
		return err
	}
	m, err := food11.ReadManifest(ctx, eng, food11.VerifyOptions{Volume: p.DataVolume})
	if err != nil {
		return fmt.Errorf("check dataset volume %s: %w", p.DataVolume, err)
	}
	if m == nil {
		progress.Warning(rep, fmt.Sprintf("volume %s holds no Food-11 dataset yet: run 'mltrain data food11 --volume %s' before training", p.DataVolume, p.DataVolume))
	}
	return nil
}

// checkPortsFree fails before anything starts when a host port the lab
// publishes is held by something else, naming the holder and the --port
// flag that moves the lab's port (names are the plan's port names).
func checkPortsFree(ctx context.Context, eng docker.Engine, p *types.Project, named map[string]int) error {
	all, err := eng.ContainerList(ctx, nil)
	if err != nil {
		return err
	}
	// A service that has a container already (running, or left created by an
	// interrupted up) is the engine's to start: its port may be bound by the
	// engine for it even before it shows as published.
	have := map[string]bool{}
	for _, c := range all {
		if c.Labels[compose.LabelProject] == p.Name {
			have[c.Labels[compose.LabelService]] = true
		}
	}
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if have[name] {
			continue
		}
		for _, pc := range s.Ports {
			port, err := strconv.Atoi(pc.Published)
			if err != nil {
				continue // ranges are checked by compose.CheckPorts
			}
			holder, ours := portHolder(all, port, p.Name)
			if ours {
				continue
			}
			move := movePortHint(named, port)
			if holder != "" {
				return clierr.Hintf(fmt.Sprintf("stop it ('docker stop %s')%s, then 'mltrain up'", holder, move),
					"host port %d (service %s) is held by container %s", port, name, holder)
			}
			addr := net.JoinHostPort(pc.HostIP, pc.Published)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return clierr.Hintf(fmt.Sprintf("find it with 'sudo ss -ltnp sport = :%d' and stop it%s, then 'mltrain up'", port, move),
					"host port %d (service %s) is in use by another process on this host: %v", port, name, err)
			}
			l.Close()
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

// portHolder names the container publishing port, and whether it is ours.
func portHolder(all []docker.Container, port int, project string) (string, bool) {
	for _, c := range all {
		for _, cp := range c.Ports {
			if cp.HostPort == port {
				return c.Name, c.Labels[compose.LabelProject] == project
			}
		}
	}
	return "", false
}
