package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// fakeRay is the Ray client double: nodes and jobs as set, or an error.
type fakeRay struct {
	nodes    []ray.Node
	jobs     []ray.Job
	nodesErr error
	jobsErr  error
	block    chan struct{} // when set, Nodes waits on it (or ctx)
}

func (f *fakeRay) Nodes(ctx context.Context) ([]ray.Node, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.nodes, f.nodesErr
}

func (f *fakeRay) Jobs(context.Context) ([]ray.Job, error) { return f.jobs, f.jobsErr }

// fixture is a whole lab of fakes that passes every check; each test
// breaks one thing.
type fixture struct {
	t     *testing.T
	deps  Deps
	plan  plan.Plan
	eng   *fake.Engine
	ray   *fakeRay
	s3    *storetest.Server
	gpus  gpu.Report
	recs  map[string]exercise.Record
	uuids map[string]string // worker container -> what nvidia-smi prints

	mu            sync.Mutex
	authOff       bool // the dashboard answers without a token
	wrongTokenOK  bool
	targets       []promTarget
	scrapeOnQuery bool // targets "unknown" turn "up" after one query
	dashboards    []grafanaDash
	grafanaDB     string
	grafanaHealth map[string]any
	jupyterCode   int
}

const (
	uuidA = "GPU-aaaaaaaa-0000-0000-0000-000000000001"
	uuidB = "GPU-bbbbbbbb-0000-0000-0000-000000000002"
	token = "lab-ray-token"
)

var (
	headIP = "172.18.0.2"
	w0IP   = "172.18.0.5"
	w1IP   = "172.18.0.6"
)

func canonicalCounts() food11.Counts { return labtest.CanonicalCounts() }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, eng: fake.New(), grafanaDB: "ok", jupyterCode: 200}
	// The doubles here answer at once: a check waiting for Prometheus to
	// catch up need not wait a real scrape interval to fail.
	prev := firstScrapeWait
	t.Cleanup(func() { firstScrapeWait = prev })
	firstScrapeWait = 1500 * time.Millisecond
	g0 := gpu.GPU{Vendor: gpu.NVIDIA, Index: 0, UUID: uuidA, Name: "NVIDIA A100-PCIE-40GB", PCIBusID: "0000:17:00.0"}
	g1 := gpu.GPU{Vendor: gpu.NVIDIA, Index: 1, UUID: uuidB, Name: "NVIDIA A100-PCIE-40GB", PCIBusID: "0000:65:00.0"}
	f.gpus = gpu.Report{GPUs: []gpu.GPU{g0, g1}, Problems: []gpu.Problem{}}
	f.plan = plan.Plan{Project: "mltrain", Mode: plan.ModeStandard, Vendor: gpu.NVIDIA, Accelerator: plan.AccelCUDA,
		DataVolume: "food11", Ports: map[string]int{"dashboard": 8265},
		Head: plan.Head{Container: service.HeadService},
		Workers: []plan.Worker{
			{Index: 0, Service: "ray-worker-0", Container: "ray-worker-0", GPU: &g0},
			{Index: 1, Service: "ray-worker-1", Container: "ray-worker-1", GPU: &g1},
		}}
	f.uuids = map[string]string{"ray-worker-0": uuidA, "ray-worker-1": uuidB}
	creds := plan.Credentials{MinIOAccessKey: storetest.AccessKey, MinIOSecretKey: storetest.SecretKey,
		MinIOLabAccessKey: "labuser", MinIOLabSecretKey: "labsecret",
		GrafanaAdminPassword: "gpw", JupyterToken: "jtok", RayAuthToken: token}
	labKeys := []string{"AWS_ACCESS_KEY_ID=" + creds.MinIOLabAccessKey, "AWS_SECRET_ACCESS_KEY=" + creds.MinIOLabSecretKey}

	// Containers: every service running and healthy.
	ips := map[string]string{"ray-head": headIP, "ray-worker-0": w0IP, "ray-worker-1": w1IP}
	for _, svc := range f.plan.Services() {
		labels := map[string]string{labels.Project: "mltrain", labels.Service: svc}
		d := docker.ContainerDetails{Container: docker.Container{Name: svc, Image: "img/" + svc, State: "running", Labels: labels},
			Running: true, Health: "healthy", Networks: map[string]string{"mltrain_default": ips[svc]}}
		switch svc {
		case service.MinIOService:
			d.Env = []string{"MINIO_ROOT_USER=" + creds.MinIOAccessKey, "MINIO_ROOT_PASSWORD=" + creds.MinIOSecretKey}
		case service.JupyterService:
			d.Env = append([]string{"RAY_ADDRESS=http://ray-head:8265", "RAY_AUTH_TOKEN=" + token, "PATH=/usr/bin"}, labKeys...)
		default:
			d.Env = labKeys
		}
		f.eng.AddContainer(d)
	}
	f.eng.InfoValue.Runtimes = []string{"runc", "nvidia"}
	f.eng.ExecFunc = func(name string, cmd []string) (docker.ExecResult, error) {
		if strings.Join(cmd, " ") != "nvidia-smi --query-gpu=uuid --format=csv,noheader" {
			return docker.ExecResult{ExitCode: 127, Stderr: "unexpected command"}, nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return docker.ExecResult{Stdout: f.uuids[name] + "\n"}, nil
	}

	// Ray: head + 2 workers with 1 GPU each, one old DEAD node, jobs.
	f.ray = &fakeRay{nodes: []ray.Node{
		{NodeID: "h", NodeIP: headIP, IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 2}},
		{NodeID: "a", NodeIP: w0IP, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 8, "GPU": 1}},
		{NodeID: "b", NodeIP: w1IP, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 8, "GPU": 1}},
		{NodeID: "old", NodeIP: "172.18.0.9", State: "DEAD", ResourcesTotal: map[string]float64{"GPU": 1}},
	}}
	f.recs, f.ray.jobs = records()
	for _, ip := range []string{headIP, w0IP, w1IP} {
		f.targets = append(f.targets, promTarget{Labels: map[string]string{"job": "ray", "instance": ip + ":8080"},
			ScrapePool: "ray", ScrapeURL: "http://" + ip + ":8080/metrics", Health: "up"})
	}
	f.dashboards = []grafanaDash{{UID: "rayDefaultDashboard", Title: "Default Dashboard", FolderTitle: "Ray", Type: "dash-db"},
		{UID: "rayTrainDashboard", Title: "Train Dashboard", FolderTitle: "Ray", Type: "dash-db"}}
	f.grafanaHealth = map[string]any{"result": true, "msg": "Grafana running",
		"data": map[string]any{"grafanaHost": "http://grafana:3000", "sessionName": "s", "dashboardUids": map[string]string{"default": "rayDefaultDashboard"}}}

	f.s3 = storetest.New(t)
	f.s3.MakeBucket("ray")
	// The fault run's checkpoints after retention (train.py keeps the newest
	// 2): the one training resumed from (epoch 1) is gone.
	f.s3.Put("ray", "fault-run/checkpoint_epoch_000008/checkpoint.ckpt", 10, time.Now())
	f.s3.Put("ray", "fault-run/checkpoint_epoch_000009/checkpoint.ckpt", 10, time.Now())
	adm, err := store.NewAdmin(store.Config{Endpoint: f.s3.URL, AccessKey: creds.MinIOAccessKey, SecretKey: creds.MinIOSecretKey})
	require.NoError(t, err)
	_, err = adm.EnsureBucketUser(context.Background(), "ray", creds.MinIOLabAccessKey, creds.MinIOLabSecretKey)
	require.NoError(t, err)

	stateDir := state.Dir(t.TempDir())
	prov := stateDir.File(render.GrafanaDashboards)
	require.NoError(t, os.MkdirAll(filepath.Dir(prov), 0o755))
	require.NoError(t, os.WriteFile(prov, []byte("providers: []\n"), 0o644))

	raySrv := httptest.NewServer(http.HandlerFunc(f.serveRay))
	promSrv := httptest.NewServer(http.HandlerFunc(f.servePrometheus))
	grafSrv := httptest.NewServer(http.HandlerFunc(f.serveGrafana))
	jupSrv := httptest.NewServer(http.HandlerFunc(f.serveJupyter))
	for _, s := range []*httptest.Server{raySrv, promSrv, grafSrv, jupSrv} {
		t.Cleanup(s.Close)
	}
	saved := state.State{Project: "mltrain", Plan: f.plan,
		Probes: plan.Probes{Ray: raySrv.URL, MinIO: f.s3.URL, Grafana: grafSrv.URL, Prometheus: promSrv.URL, Jupyter: jupSrv.URL},
		URLs:   plan.URLs{"jupyter": "http://203.0.113.7:8888/lab"}}
	f.deps = Deps{State: saved, Creds: creds, StateDir: stateDir, Engine: f.eng, Ray: f.ray, HTTP: &http.Client{Timeout: 5 * time.Second},
		MinIO: func(access, secret string) (Store, error) {
			return store.New(store.Config{Endpoint: f.s3.URL, AccessKey: access, SecretKey: secret})
		},
		DetectGPUs: func(context.Context) (gpu.Report, error) { return f.gpus, nil },
		Access:     func(string) error { return nil },
		Manifest: func(_ context.Context, vol string) (*food11.Manifest, error) {
			c := canonicalCounts()
			return &food11.Manifest{Format: 1, Dataset: "food11", Counts: c, Files: c.Total(),
				Source: food11.Source{File: "Food-11.zip", SHA256: "0123456789abcdef0123"}, LoadedAt: time.Now()}, nil
		},
		Records: func() (map[string]exercise.Record, error) { return f.recs, nil },
	}
	return f
}

// setPlan changes the plan in both places the checks read it.
func (f *fixture) setPlan(p plan.Plan) {
	f.plan = p
	f.deps.State.Plan = p
}

func (f *fixture) run(o Options) Report {
	return Run(context.Background(), f.deps, o)
}

// check runs the whole verification and returns one check.
func (f *fixture) check(id string) Check {
	f.t.Helper()
	r := f.run(Options{Timeout: 5 * time.Second})
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	f.t.Fatalf("no check %s in the report", id)
	return Check{}
}

func job(id string, st ray.JobStatus, start time.Time, secs int) ray.Job {
	return ray.Job{Type: "SUBMISSION", SubmissionID: id, Status: st, StartTimeMs: start.UnixMilli(),
		EndTimeMs: start.Add(time.Duration(secs) * time.Second).UnixMilli()}
}

// records are six successful exercises and the Ray jobs they ran.
func records() (map[string]exercise.Record, []ray.Job) {
	t0 := time.Now().Add(-time.Hour)
	ok := true
	jr := func(id string, ips ...string) exercise.JobRun {
		return exercise.JobRun{SubmissionID: id, Status: ray.Succeeded, NodeIPs: ips, Result: &exercise.Result{Mode: "ray", OK: &ok}}
	}
	recs := map[string]exercise.Record{
		"submit": {Exercise: "submit", OK: true, Jobs: []exercise.JobRun{jr("sub-1", w0IP)}},
		"infeasible": {Exercise: "infeasible", OK: true, Jobs: []exercise.JobRun{{SubmissionID: "inf-1", Status: ray.Stopped}},
			Infeasible: &exercise.InfeasibleObs{PendingSeconds: 30, StayedPending: true, MaxGPUsPerNode: 1, AliveNodes: 3,
				JobMessage: "Job has not started yet.", Demand: &ray.Demand{Line: " {'GPU': 2.0, 'CPU': 8.0}: 1+ pending tasks/actors"}}},
		"multi": {Exercise: "multi", OK: true, Jobs: []exercise.JobRun{jr("multi-1", w0IP, w1IP)}},
		"fractional": {Exercise: "fractional", OK: true,
			Jobs: []exercise.JobRun{jr("frac-0"), jr("frac-1"), jr("frac-2"), jr("frac-3")},
			Fractional: &exercise.FractionalObs{AloneSeconds: 60, MakespanSeconds: 90, Ratio: 1.5, MaxConcurrent: 3,
				JobsByNode: map[string][]string{"ray-worker-0": {"frac-1", "frac-3"}, "ray-worker-1": {"frac-2"}}, SharedNode: "ray-worker-0"}},
		"fault": {Exercise: "fault", OK: true, Jobs: []exercise.JobRun{jr("fault-run")},
			Fault: &exercise.FaultObs{Run: "fault-run", TrainingNodeIP: w0IP, StoppedContainer: "ray-worker-0",
				Registered:   []string{"fault-run/checkpoint_epoch_000000", "fault-run/checkpoint_epoch_000001"},
				LatestAtStop: "fault-run/checkpoint_epoch_000001", RegisteredAtStop: true,
				ResumedFrom: "fault-run/checkpoint_epoch_000001", ResumedOnNodeIP: w1IP, ResumedFromReported: true, ResumedFromLatest: true,
				ResumedContainer: "ray-worker-1", RecoverySeconds: 21, CheckpointInMinIO: true, Restarted: true}},
		"tune": {Exercise: "tune", OK: true, Jobs: []exercise.JobRun{jr("tune-1")},
			Tune: &exercise.TuneObs{Samples: 8, MaxT: 4, EndsKnown: true, StoppedByScheduler: 3, EndedByScript: 2, StoppedEarly: 3, Completed: 3,
				Best: &exercise.Trial{BatchSize: 32}}},
	}
	jobs := []ray.Job{
		job("sub-1", ray.Succeeded, t0, 40),
		job("inf-1", ray.Stopped, t0.Add(time.Minute), 31),
		job("multi-1", ray.Succeeded, t0.Add(2*time.Minute), 50),
		job("frac-0", ray.Succeeded, t0.Add(3*time.Minute), 60),
		job("frac-1", ray.Succeeded, t0.Add(5*time.Minute), 80),
		job("frac-2", ray.Succeeded, t0.Add(5*time.Minute), 85),
		job("frac-3", ray.Succeeded, t0.Add(5*time.Minute), 90),
		job("fault-run", ray.Succeeded, t0.Add(8*time.Minute), 200),
		job("tune-1", ray.Succeeded, t0.Add(12*time.Minute), 300),
	}
	return recs, jobs
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fixture) serveRay(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch {
	case f.authOff:
	case auth == "":
		http.Error(w, "Unauthorized: Missing authentication token", http.StatusUnauthorized)
		return
	case auth != "Bearer "+token && !f.wrongTokenOK:
		http.Error(w, "Forbidden: Invalid authentication token", http.StatusForbidden)
		return
	}
	switch r.URL.Path {
	case "/api/version":
		writeJSON(w, map[string]string{"version": "4", "ray_version": "2.54.0"})
	case "/api/jobs/":
		writeJSON(w, []any{})
	case "/api/grafana_health":
		writeJSON(w, f.grafanaHealth)
	case "/api/prometheus_health":
		writeJSON(w, map[string]any{"result": true, "msg": "prometheus running"})
	default:
		http.NotFound(w, r)
	}
}

func (f *fixture) servePrometheus(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/api/v1/targets" {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, map[string]any{"status": "success", "data": map[string]any{"activeTargets": f.targets}})
	// As Prometheus: a target not scraped yet is scraped by the next query.
	for i := range f.targets {
		if f.targets[i].Health == "unknown" && f.scrapeOnQuery {
			f.targets[i].Health = "up"
		}
	}
}

func (f *fixture) serveGrafana(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/health":
		writeJSON(w, map[string]string{"database": f.grafanaDB, "version": "11.2.0"})
	case "/api/search":
		writeJSON(w, f.dashboards)
	default:
		http.NotFound(w, r)
	}
}

func (f *fixture) serveJupyter(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jupyterCode != 200 {
		http.Error(w, "nope", f.jupyterCode)
		return
	}
	if r.URL.Path != "/api" || r.Header.Get("Authorization") != "token jtok" {
		http.Error(w, fmt.Sprintf("forbidden %s", r.URL.Path), http.StatusForbidden)
		return
	}
	writeJSON(w, map[string]string{"version": "2.14.2"})
}
