package lifecycle_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

type standinLab struct {
	t        testing.TB
	eng      docker.Engine
	opts     lifecycle.UpOptions
	project  string
	stateDir string
}

// newStandinLab prepares a CPU-rehearsal lab of stand-ins (real MinIO) on
// free loopback ports, removed (volumes too) when the test ends.
func newStandinLab(t testing.TB) *standinLab {
	eng := dockertest.Engine(t)
	o := labtest.LabOptions(t, eng, "mlt")
	sl := &standinLab{t: t, eng: eng, project: o.Project, stateDir: t.TempDir(),
		opts: lifecycle.UpOptions{Lab: o, Images: images.Options{Pull: images.PullNever}, Timeout: 2 * time.Minute, StopTimeout: 2 * time.Second}}
	sl.opts.StateDir = state.Dir(sl.stateDir)
	return sl
}

func (s *standinLab) deps(rep progress.Reporter) lifecycle.UpDeps {
	return lifecycle.UpDeps{Engine: s.eng, Reporter: rep, Detect: func(context.Context) (host.Facts, error) {
		return labtest.RehearsalFacts(), nil
	}}
}

func (s *standinLab) up(ctx context.Context) (lifecycle.Result, error) {
	return lifecycle.Up(ctx, s.deps(nil), s.opts)
}

func (s *standinLab) ids() map[string]string {
	list, err := s.eng.ContainerList(context.Background(), map[string]string{labels.Project: s.project})
	require.NoError(s.t, err)
	out := map[string]string{}
	for _, c := range list {
		out[c.Labels[labels.Service]] = c.ID
	}
	return out
}

// rayDeadAfter is how long the stand-in head keeps a silent worker ALIVE in
// these tests (Ray's own ~15 s, shortened; long enough to see the window).
const rayDeadAfter = 6 * time.Second

// headOverride sets the stand-in head's DEAD delay, plus extra override text.
func headOverride(extra string) []byte {
	return []byte("services:\n  ray-head:\n    environment:\n      STANDIN_RAY_DEAD_AFTER: " + rayDeadAfter.String() + "\n" + extra)
}

func TestUpStatusWorkerDown(t *testing.T) {
	s := newStandinLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(s.stateDir, "compose.override.yaml"), headOverride(""), 0o644))

	var rec progress.Recorder
	res, err := lifecycle.Up(ctx, s.deps(&rec), s.opts)
	require.NoError(t, err)
	assert.Equal(t, plan.ModeCPU, res.Plan.Mode)
	assert.Len(t, res.Apply.Created, 7, "head, 2 workers, minio, prometheus, grafana, jupyter")
	assert.True(t, res.BucketMade, "the ray bucket was made in the real MinIO")
	assert.True(t, rec.Has("ready ray", progress.Done))
	assert.True(t, warned(&rec, "holds no Food-11 dataset yet"), "up says the dataset is not loaded")
	assert.Contains(t, res.URLs["ray_dashboard"], "127.0.0.1:")
	first := s.ids()
	// The file mltrain wrote works with Docker Compose itself: it sees the
	// lab mltrain started as its own project.
	out, err := dockertest.Compose(t, dockertest.ComposeV5(t), "-f", s.stateDir+"/compose.yaml", "ps", "--services", "--status", "running")
	require.NoError(t, err, out)
	assert.ElementsMatch(t, []string{"grafana", "jupyter", "minio", "prometheus", "ray-head", "ray-worker-0", "ray-worker-1"}, strings.Fields(out))
	require.Len(t, first, 7)
	for svc, id := range first {
		d, err := s.eng.ContainerInspect(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, s.project, d.Labels[labels.Project], svc)
		assert.NotEmpty(t, d.Labels[labels.ConfigHash], svc)
		assert.True(t, d.Running, svc)
	}
	st, err := state.Dir(s.stateDir).State()
	require.NoError(t, err)
	assert.Equal(t, s.project, st.Project)
	fi, err := os.Stat(filepath.Join(s.stateDir, state.StateFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// A second up is a no-op: same containers, bucket already there.
	res, err = s.up(ctx)
	require.NoError(t, err)
	assert.Empty(t, res.Apply.Created)
	assert.Empty(t, res.Apply.Recreated)
	assert.False(t, res.BucketMade)
	assert.Equal(t, first, s.ids())

	// A stopped worker is started again by up, not recreated.
	require.NoError(t, s.eng.ContainerStop(ctx, first["ray-worker-0"], 2*time.Second))
	res, err = s.up(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"ray-worker-0"}, res.Apply.Started)
	assert.Empty(t, res.Apply.Recreated)
	assert.Equal(t, first, s.ids())

	// A user override changing one worker recreates only that worker.
	require.NoError(t, os.WriteFile(filepath.Join(s.stateDir, "compose.override.yaml"),
		headOverride("  ray-worker-1:\n    environment:\n      EXTRA_SETTING: \"1\"\n"), 0o644))
	res, err = s.up(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"ray-worker-1"}, res.Apply.Recreated)
	now := s.ids()
	assert.NotEqual(t, first["ray-worker-1"], now["ray-worker-1"])
	assert.Equal(t, first["ray-worker-0"], now["ray-worker-0"])
	assert.Equal(t, first["ray-head"], now["ray-head"])

	// status from labels and Ray; worker stop/start shows in Ray's view.
	st0, err := status.Get(ctx, s.eng, nextstep.CommandsFor(s.project, state.Dir(s.stateDir)))
	require.NoError(t, err)
	require.Len(t, st0.Services, 7)
	// The replaced worker's old node stays listed (DEAD), as in Ray, once
	// the head's health checks gave up on it.
	bound := 2*rayDeadAfter + 20*time.Second // the delay, heartbeats, a busy host
	require.Eventually(t, func() bool {
		st, err := status.Get(ctx, s.eng, nextstep.CommandsFor(s.project, state.Dir(s.stateDir)))
		return err == nil && strings.HasPrefix(st.Ray, "3 of") && workerRayState(st, 1) == "ALIVE"
	}, bound, 500*time.Millisecond)
	name, err := lifecycle.StopWorker(ctx, s.eng, s.project, 1)
	require.NoError(t, err)
	stopped := time.Now()
	assert.Equal(t, s.project+"-ray-worker-1", name)
	// A stop is SIGTERM: the worker's raylet unregisters and Ray lists its
	// node DEAD at once (docs/ray-fidelity.md, "graceful stop"), so status
	// right after it never says Ray has not noticed, nor "3 of 3" alone.
	st0, err = status.Get(ctx, s.eng, nextstep.CommandsFor(s.project, state.Dir(s.stateDir)))
	require.NoError(t, err)
	t.Logf("status right after the stop (%s): %s; notes: %q", time.Since(stopped), st0.Ray, st0.Notes)
	assert.False(t, workerRayStale(st0, 1), "the head took the stopped worker's unregister: %s", st0.Ray)
	assert.NotEqual(t, "ALIVE", workerRayState(st0, 1), st0.Ray)
	if workerRayStale(st0, 1) {
		assert.Contains(t, st0.Ray, "including the node of ray-worker-1, whose container is down")
		assert.Contains(t, strings.Join(st0.Notes, "\n"), "ray-worker-1: container exited")
	}
	if m := regexp.MustCompile(`^(\d+) of (\d+) nodes ALIVE`).FindStringSubmatch(st0.Ray); m != nil && m[1] == m[2] {
		assert.Contains(t, st0.Ray, "whose container is down", "never every node ALIVE without saying the stopped worker is down")
	}
	// Next acts on this lab: its state directory is not the project's default.
	assert.Contains(t, st0.Next, "mltrain --project "+s.project+" --state-dir "+nextstep.ShellWord(s.stateDir)+" worker start 1")
	require.Eventually(t, func() bool {
		st, err := status.Get(ctx, s.eng, nextstep.CommandsFor(s.project, state.Dir(s.stateDir)))
		return err == nil && workerState(st, 1) == "exited" && strings.HasPrefix(st.Ray, "2 of") && workerRayState(st, 1) != "ALIVE"
	}, bound, 500*time.Millisecond, "Ray sees the stopped worker DEAD")
	_, err = lifecycle.StartWorker(ctx, s.eng, s.project, 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := status.Get(ctx, s.eng, nextstep.CommandsFor(s.project, state.Dir(s.stateDir)))
		return err == nil && workerState(st, 1) == "running" && strings.HasPrefix(st.Ray, "3 of")
	}, bound, 500*time.Millisecond)
	_, err = lifecycle.StopWorker(ctx, s.eng, s.project, 7)
	assert.ErrorContains(t, err, "has no worker 7")

	var logs bytes.Buffer
	require.NoError(t, lifecycle.Logs(ctx, s.eng, s.project, "ray-head", false, "20", &logs, &logs))
	assert.Contains(t, logs.String(), "standin ray head up")

	// down keeps the volumes; --volumes removes the lab's (never the dataset).
	removed, err := lifecycle.Down(ctx, s.eng, s.project, false, nil)
	require.NoError(t, err)
	assert.Len(t, removed, 7)
	vols, err := s.eng.VolumeList(ctx, map[string]string{labels.Project: s.project})
	require.NoError(t, err)
	assert.NotEmpty(t, vols, "down keeps the lab's volumes")
	_, err = lifecycle.Down(ctx, s.eng, s.project, true, nil)
	require.NoError(t, err)
	vols, err = s.eng.VolumeList(ctx, map[string]string{labels.Project: s.project})
	require.NoError(t, err)
	assert.Empty(t, vols)
	_, err = s.eng.VolumeInspect(ctx, s.project+"-food11")
	assert.NoError(t, err, "the dataset volume survives down --volumes")
}

func warned(rec *progress.Recorder, text string) bool {
	for _, e := range rec.Events() {
		if e.Kind == progress.Warn && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func workerState(st status.Status, idx int) string {
	for _, s := range st.Services {
		if s.WorkerIndex != nil && *s.WorkerIndex == idx {
			return s.State
		}
	}
	return ""
}

func workerRayStale(st status.Status, idx int) bool {
	for _, s := range st.Services {
		if s.WorkerIndex != nil && *s.WorkerIndex == idx {
			return s.RayStale
		}
	}
	return false
}

func workerRayState(st status.Status, idx int) string {
	for _, s := range st.Services {
		if s.WorkerIndex != nil && *s.WorkerIndex == idx {
			return s.RayState
		}
	}
	return ""
}

func TestUpFailsFastAndRollsBackFirstUp(t *testing.T) {
	s := newStandinLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sleeper := dockertest.SleeperImage(t, s.eng)
	// Jupyter is replaced by a program that exits with code 4 after a moment.
	s.opts.Lab.Images[service.RoleJupyter] = sleeper
	s.opts.Lab.Healthchecks = map[service.Role][]string{service.RoleJupyter: {"CMD", "/app", "health"}}
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(s.stateDir, "compose.override.yaml"),
		[]byte("services:\n  jupyter:\n    environment:\n      EXIT_AFTER: 300ms\n      EXIT_CODE: \"4\"\n"), 0o644))

	_, err := s.up(ctx)
	require.Error(t, err)
	var cf *compose.ContainerFailure
	require.True(t, errors.As(err, &cf), "got %v", err)
	assert.Equal(t, s.project+"-jupyter", cf.Container)
	assert.Contains(t, cf.Reason, "exited with code 4")
	assert.Contains(t, cf.Logs, "sleeper exiting with 4")
	assert.Contains(t, nextstep.Commands{}.Hint(err), "docker logs "+s.project+"-jupyter")
	assert.Empty(t, s.ids(), "a failed first up removes its containers")
	vols, err := s.eng.VolumeList(ctx, map[string]string{labels.Project: s.project})
	require.NoError(t, err)
	assert.NotEmpty(t, vols, "rollback keeps volumes")
}

func TestUpCancelledThenConverges(t *testing.T) {
	s := newStandinLab(t)
	s.opts.NoRollback = true // a cancelled up keeps what it made, so the re-run converges from there
	ctx, cancel := context.WithCancel(context.Background())
	rep := cancelWhen{match: "service ray-head", cancel: cancel}
	_, err := lifecycle.Up(ctx, s.deps(rep), s.opts)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	partial := s.ids()
	assert.Len(t, partial, 7, "every container is made before the first starts")
	running := 0
	for _, id := range partial {
		if d, err := s.eng.ContainerInspect(context.Background(), id); err == nil && d.Running {
			running++
		}
	}
	assert.Less(t, running, 7, "the cancel stopped the start part way")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel2()
	res, err := s.up(ctx2)
	require.NoError(t, err)
	for svc, id := range partial {
		assert.Equal(t, id, s.ids()[svc], "kept %s from the cancelled up", svc)
	}
	assert.Empty(t, res.Apply.Created, "nothing is made twice")
	assert.Empty(t, res.Apply.Recreated)
	assert.Len(t, res.Apply.Started, 7-running)
}

type cancelWhen struct {
	match  string
	cancel func()
}

func (c cancelWhen) Report(e progress.Event) {
	if e.Step == c.match && e.Kind == progress.Done {
		c.cancel()
	}
}

func TestUpNamesTheHolderOfATakenPort(t *testing.T) {
	s := newStandinLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sleeper := dockertest.SleeperImage(t, s.eng)
	holder := s.project + "-holder"
	port := s.opts.Lab.Ports[service.PortGrafana]
	p := network.MustParsePort("3000/tcp")
	id, err := s.eng.ContainerCreate(ctx, docker.ContainerSpec{Name: holder,
		Config:     &container.Config{Image: sleeper, Labels: map[string]string{dockertest.TestLabel: "1"}, ExposedPorts: network.PortSet{p: {}}},
		HostConfig: &container.HostConfig{PortBindings: network.PortMap{p: {{HostPort: itoa(port)}}}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.eng.ContainerRemove(context.Background(), id, true) })
	require.NoError(t, s.eng.ContainerStart(ctx, id))

	_, err = s.up(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "host port "+itoa(port)+" (service grafana) is held by container "+holder)
	assert.Contains(t, clierr.Hint(err), "docker stop "+holder)
	assert.Contains(t, clierr.Hint(err), "--port grafana=PORT", "names the real flag that moves the port")
	assert.Empty(t, s.ids(), "nothing was started")

	// A port held by a process, not a container.
	require.NoError(t, s.eng.ContainerRemove(ctx, id, true))
	l, err := net.Listen("tcp", "127.0.0.1:"+itoa(s.opts.Lab.Ports[service.PortJupyter]))
	require.NoError(t, err)
	defer l.Close()
	_, err = s.up(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(service jupyter) is in use by another process")
}

func itoa(i int) string { return strconv.Itoa(i) }
