package labtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

type standin struct {
	eng     docker.Engine
	dir     state.Dir
	project string
	c       state.Clients
}

// upStandin brings up a CPU-rehearsal lab of stand-ins (real MinIO) with
// a compose override (and the lab options tune changes), and connects to
// it as the exercises do.
func upStandin(t *testing.T, override string, tune ...func(*plan.Options)) *standin {
	t.Helper()
	eng := dockertest.Engine(t)
	o := labtest.LabOptions(t, eng, "mlt-ray")
	for _, f := range tune {
		f(&o)
	}
	dir := state.Dir(t.TempDir())
	if override != "" {
		require.NoError(t, os.WriteFile(dir.File("compose.override.yaml"), []byte(override), 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Enough CPUs that the workers advertise the course's 8 per job and
	// two 4-CPU trials each (Ray's logical counts: nothing is reserved).
	facts := labtest.RehearsalFacts()
	facts.CPUs = 68
	_, err := lifecycle.Up(ctx, lifecycle.UpDeps{Engine: eng, Detect: func(context.Context) (host.Facts, error) {
		return facts, nil
	}}, lifecycle.UpOptions{Lab: o, StateDir: dir, Images: images.Options{Pull: images.PullNever}, Timeout: 2 * time.Minute, StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	c, err := dir.Connect()
	require.NoError(t, err)
	return &standin{eng: eng, dir: dir, project: o.Project, c: c}
}

func (s *standin) container(t *testing.T, service string) string {
	list, err := s.eng.ContainerList(context.Background(), map[string]string{labels.Project: s.project, labels.Service: service})
	require.NoError(t, err)
	require.Len(t, list, 1, service)
	return list[0].ID
}

// The exercises, unchanged, against the stand-in Ray in the containers:
// jobs are placed and run train.py's contract, the fault exercise stops a
// real worker container mid-run and Train resumes on the other from a
// checkpoint the stand-in wrote to MinIO with the lab user's keys.
func TestStandinRunsTheExercises(t *testing.T) {
	s := upStandin(t, "")
	env := exercise.Env{Ray: s.c.Ray, Store: s.c.Store, Engine: s.eng, Project: s.project, StateDir: s.dir,
		JobEnv: map[string]string{"MLTRAIN_ACCELERATOR": plan.AccelCPU}}
	opts := exercise.Options{Quick: true, FakeData: true, Poll: 500 * time.Millisecond, Timeout: 3 * time.Minute,
		CheckpointTimeout: time.Minute, NumSamples: 8}
	for _, name := range []string{"submit", "multi", "fractional", "fault", "tune"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rec, err := exercise.Run(ctx, env, name, opts)
			require.NoError(t, err)
			assert.True(t, rec.OK, rec.Problems)
		})
	}
}

// `ray job stop` of a job whose supervisor was never placed does nothing;
// killing the supervisor actor ends it (what the infeasible exercise needs).
func TestStandinInfeasibleJobEndsByKillingItsSupervisor(t *testing.T) {
	s := upStandin(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := s.c.Ray.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py --mode plain", EntrypointNumGPUs: 2, EntrypointNumCPUs: 8})
	require.NoError(t, err)
	text, err := s.c.Ray.ClusterStatus(ctx)
	require.NoError(t, err)
	_, found := ray.FindDemand(ray.ParseDemands(text), map[string]float64{"GPU": 2})
	assert.True(t, found, text)
	stopped, err := s.c.Ray.Stop(ctx, id)
	require.NoError(t, err)
	assert.True(t, stopped)
	time.Sleep(2 * time.Second)
	j, err := s.c.Ray.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, ray.Pending, j.Status)
	a, ok, err := s.c.Ray.JobSupervisor(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.c.Ray.KillActor(ctx, a.ActorID))
	j, err = s.c.Ray.Wait(ctx, id, ray.WaitOptions{Poll: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, "JOB_SUPERVISOR_ACTOR_DIED", j.ErrorType)
}

// A restarted head is a new cluster: it lists only itself, and the old
// workers' raylets, unknown to it, exit after the reconnect timeout, taking
// `ray start --block` and their containers with them (exit 1).
func TestStandinHeadRestartIsANewCluster(t *testing.T) {
	// No restart policy here: this pins Ray's own behaviour, the exit
	// that the lab's restart: on-failure answers (cmd/mltrain's
	// TestHeadRestartTheWorkersRejoin).
	const reconnect = "    restart: \"no\"\n    environment:\n      RAY_gcs_rpc_server_reconnect_timeout_s: \"3\"\n"
	s := upStandin(t, "services:\n  ray-worker-0:\n"+reconnect+"  ray-worker-1:\n"+reconnect)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes, err := s.c.Ray.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	head := s.container(t, "ray-head")
	require.NoError(t, s.eng.ContainerStop(ctx, head, 2*time.Second)) // as `docker restart` does
	require.NoError(t, s.eng.ContainerStart(ctx, head))
	var after []ray.Node
	require.Eventually(t, func() bool {
		after, err = s.c.Ray.Nodes(ctx)
		return err == nil
	}, time.Minute, 500*time.Millisecond)
	require.Len(t, after, 1, "the new GCS knows only its head")
	assert.True(t, after[0].IsHeadNode)
	for _, w := range []string{"ray-worker-0", "ray-worker-1"} {
		id := s.container(t, w)
		require.Eventually(t, func() bool {
			d, err := s.eng.ContainerInspect(ctx, id)
			return err == nil && !d.Running
		}, 30*time.Second, 500*time.Millisecond, w+" exits once its raylet gives up")
		d, err := s.eng.ContainerInspect(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 1, d.ExitCode, w)
	}
}

// An uploaded working_dir package is deleted once no job references it and
// the pin of its last GET expired; a job sent with the old URI then fails.
func TestStandinDeletesAnExpiredPackage(t *testing.T) {
	s := upStandin(t, "services:\n  ray-head:\n    environment:\n      RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S: \"2\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/train.py", []byte("print('hi')\n"), 0o644))
	prep, err := s.c.Ray.PrepareRuntimeEnv(ctx, map[string]any{"working_dir": dir}, dir)
	require.NoError(t, err)
	first, err := s.c.Ray.Submit(ctx, ray.SubmitRequest{Entrypoint: "echo hi", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)
	j, err := s.c.Ray.Wait(ctx, first, ray.WaitOptions{Poll: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, ray.Succeeded, j.Status, j.Message)
	time.Sleep(3 * time.Second)
	stale, err := s.c.Ray.Submit(ctx, ray.SubmitRequest{Entrypoint: "echo hi", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)
	j, err = s.c.Ray.Wait(ctx, stale, ray.WaitOptions{Poll: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, "RUNTIME_ENV_SETUP_FAILURE", j.ErrorType, j.Message)
	up, err := s.c.Ray.UploadPackage(ctx, prep.Package)
	require.NoError(t, err)
	assert.True(t, up, "asked again before the next submission, it is uploaded again")
}
