package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

const statusProject = "stat"

// statusLab is a planned 2-worker lab in a state dir, its containers in the
// fake engine (as the engine lists them after an up), and Ray's double.
type statusLab struct {
	dir  state.Dir
	eng  *fake.Engine
	ray  *raytest.Modelled
	clk  *raytest.Clock // Ray's: it moves when the test says time passed
	plan plan.Plan
	proj *types.Project // as rendered
}

// container is svc's container name, by Compose's rule over the rendered project.
func (s *statusLab) container(t *testing.T, svc string) string {
	t.Helper()
	sc, err := s.proj.GetService(svc)
	require.NoError(t, err)
	return compose.ContainerName(s.proj, sc)
}

func newStatusLab(t *testing.T, services ...string) *statusLab {
	t.Helper()
	s := &statusLab{dir: state.Dir(t.TempDir()), eng: fake.New(), clk: raytest.NewClock(time.Now())}
	s.ray = raytest.NewModel(t, raymodel.Config{Now: s.clk.Now}, "")
	creds, _, err := s.dir.CreateCredentials()
	require.NoError(t, err)
	s.plan, err = plan.New(labtest.RehearsalFacts(), plan.Options{Project: statusProject}, creds)
	require.NoError(t, err)
	r, err := render.Render(context.Background(), s.dir, s.plan)
	require.NoError(t, err)
	s.proj = r.Project
	if len(services) == 0 {
		services = []string{service.HeadService, service.WorkerService(0), service.WorkerService(1), service.MinIOService,
			service.PrometheusService, service.GrafanaService, service.JupyterService}
	}
	nodes := []ray.Node{}
	for i, svc := range services {
		ip := fmt.Sprintf("172.20.0.%d", i+2)
		l := map[string]string{labels.Project: statusProject, labels.Service: svc, labels.Role: "other"}
		for _, w := range s.plan.Workers {
			if w.Service == svc {
				l[labels.Role], l[labels.WorkerIndex], l[labels.Accelerator] = labels.RoleWorker, strconv.Itoa(w.Index), plan.AccelCPU
				nodes = append(nodes, ray.Node{NodeID: "n-" + svc, NodeIP: ip, State: "ALIVE", ResourcesTotal: map[string]float64{"GPU": 1}})
			}
		}
		if svc == service.HeadService {
			nodes = append(nodes, ray.Node{NodeID: "n-head", NodeIP: ip, IsHeadNode: true, State: "ALIVE"})
		}
		s.eng.AddContainer(docker.ContainerDetails{
			Container: docker.Container{Name: s.container(t, svc), State: "running", Labels: l},
			Running:   true, Health: "healthy", Networks: map[string]string{statusProject + "_default": ip}})
	}
	s.ray.JoinNodes(nodes...)
	return s
}

// saveState is what a finished up leaves: state.json, Ray reached at the double.
func (s *statusLab) saveState(t *testing.T) {
	require.NoError(t, s.dir.SaveState(state.State{Project: statusProject, Plan: s.plan,
		Probes: plan.Probes{Ray: s.ray.URL, MinIO: "http://127.0.0.1:1"}, URLs: plan.MakeURLs(s.plan)}))
}

// stopWorker stops worker i as the real engine does: exited, and no address.
func (s *statusLab) stopWorker(t *testing.T, i int) string {
	t.Helper()
	name := s.container(t, service.WorkerService(i))
	c := s.eng.Containers[name]
	ip := c.Networks[statusProject+"_default"]
	require.NoError(t, s.eng.ContainerStop(context.Background(), name, time.Second))
	c.Networks = map[string]string{statusProject + "_default": ""}
	return ip
}

func (s *statusLab) status(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	a.connect = func(context.Context) (docker.Engine, error) { return s.eng, nil }
	root := a.root()
	root.SetArgs(append([]string{"status", "--state-dir", s.dir.Path(), "--project", statusProject}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// Ray keeps a killed or crashed worker's node ALIVE until its health checks
// give up (a stopped one unregisters at once): status never shows every node
// ALIVE without saying that worker is down.
func TestStatusAfterAWorkerIsKilledSaysRayHasNotNoticed(t *testing.T) {
	s := newStatusLab(t)
	s.saveState(t)
	ip := s.stopWorker(t, 0)
	require.True(t, s.ray.SilenceIP(ip)) // killed, not stopped: its raylet never unregistered

	out, err := s.status(t)
	t.Logf("status right after the stop:\n%s", out)
	require.Error(t, err, "a planned worker that is not running fails status, after showing why")
	assert.Equal(t, 1, clierr.Code(err))
	assert.EqualError(t, err, `lab "stat": 1 planned service(s) not running: ray-worker-0 (exited): planned services are not running`)
	assert.Equal(t, "run 'mltrain --project "+statusProject+" --state-dir "+s.dir.Path()+" worker start 0'", clierr.Hint(err), "the next step, for this lab")
	assert.Regexp(t, `ray-worker-0 +stat-ray-worker-0 +exited .* ALIVE \(container down, Ray has not noticed yet\)`, out)
	assert.NotRegexp(t, `Ray: 3 of 3 nodes ALIVE\n`, out, "never N of N ALIVE alone")
	assert.Contains(t, out, "Ray: 3 of 3 nodes ALIVE, including the node of ray-worker-0, whose container is down: Ray has not noticed yet")
	assert.Contains(t, out, "ray-worker-0: container exited")
	assert.Contains(t, out, "Ray still lists the node ALIVE: it marks it DEAD after its health checks time out, ~15s (up to ~65s)")

	// Once the health checks give up, Ray and the container agree.
	typical, _ := s.ray.Config().DeadAfter()
	s.clk.Add(typical)
	out, err = s.status(t)
	assert.ErrorIs(t, err, status.ErrServicesDown)
	assert.Contains(t, out, "Ray: 2 of 3 nodes ALIVE\n")
	assert.Regexp(t, `ray-worker-0 +stat-ray-worker-0 +exited .* not ALIVE\n`, out)
	assert.Contains(t, out, "ray-worker-0: container exited; Ray lists no ALIVE node for it")
}

// Ray keeps each restarted worker's old node in its list, DEAD (the GCS's
// dead node cache): status counts the lab's current nodes and says the
// DEAD ones are history, not "3 of 6".
func TestStatusCountsTheDeadNodesOfRestartsApart(t *testing.T) {
	s := newStatusLab(t)
	s.saveState(t)
	typical, _ := s.ray.Config().DeadAfter()
	name := s.container(t, service.WorkerService(0))
	for i := range 3 {
		ip := s.stopWorker(t, 0)
		require.True(t, s.ray.SilenceIP(ip))
		s.clk.Add(typical) // Ray marks the old node DEAD
		require.NoError(t, s.eng.ContainerStart(context.Background(), name))
		s.eng.Containers[name].Networks = map[string]string{statusProject + "_default": ip}
		s.ray.JoinNodes(ray.Node{NodeID: fmt.Sprintf("n-restart-%d", i), NodeIP: ip, State: "ALIVE", ResourcesTotal: map[string]float64{"GPU": 1}})
	}
	require.Len(t, s.ray.Nodes(), 6, "Ray lists the three DEAD nodes beside the three ALIVE ones")

	out, err := s.status(t)
	require.NoError(t, err, out)
	assert.Contains(t, out, "Ray: 3 of 3 nodes ALIVE (3 DEAD from earlier restarts)\n")
	assert.NotContains(t, out, "of 6")
}

// An up interrupted before its workers were created: status names the
// planned services that have no container and exits non-zero.
func TestStatusNamesTheServicesAnInterruptedUpLeftOut(t *testing.T) {
	s := newStatusLab(t, service.HeadService, service.MinIOService, service.PrometheusService, service.GrafanaService, service.JupyterService)
	// The up recorded its plan in state.json before starting anything and
	// never marked it ready (UpAt zero).
	s.saveState(t)
	// A render since (a preview with one worker) rewrites compose.yaml, not
	// the lab's record: state.json alone says which services the lab has.
	creds, err := s.dir.Credentials()
	require.NoError(t, err)
	one, err := plan.New(labtest.RehearsalFacts(), plan.Options{Project: statusProject, Workers: 1}, creds)
	require.NoError(t, err)
	_, err = render.Render(context.Background(), s.dir, one)
	require.NoError(t, err)
	out, err := s.status(t)
	t.Logf("status after an interrupted up:\n%s", out)
	require.Error(t, err)
	assert.Equal(t, 1, clierr.Code(err))
	assert.Contains(t, err.Error(), "2 planned service(s) have no container: ray-worker-0, ray-worker-1")
	assert.Contains(t, err.Error(), "(planned in state.json)")
	assert.Contains(t, out, "(an up that did not finish)")
	assert.Contains(t, clierr.Hint(err), "--state-dir "+nextstep.ShellWord(s.dir.Path())+" up", "the hint acts on this lab")
	assert.Regexp(t, `ray-worker-0 +- +missing`, out)
	assert.Contains(t, out, "minio")

	// JSON says the same, and fails the same.
	out, err = s.status(t, "--json")
	require.Error(t, err)
	assert.Contains(t, out, `"missing": [`)
	assert.Contains(t, out, `"ray-worker-1"`)
}

func TestStatusWithoutAnyStateSaysSo(t *testing.T) {
	s := &statusLab{dir: state.Dir(t.TempDir()), eng: fake.New()}
	out, err := s.status(t)
	require.NoError(t, err)
	assert.Regexp(t, `Lab "stat" has no containers. Next: 'mltrain --project stat --state-dir \S+ up'.`, out)
	assert.Contains(t, out, "no lab state in "+s.dir.Path())
}
