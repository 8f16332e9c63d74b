package exercise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/state"
)

type fixture struct {
	t     *testing.T
	ray   *raytest.Modelled
	clock *raytest.Clock
	s3    *storetest.Server
	env   exercise.Env
	opts  exercise.Options
	rec   *progress.Recorder
	state state.Dir
}

// tick is how far Ray's clock moves with each request the exercise makes:
// its polls drive the model's time, so a run is the same on any machine.
const tick = 100 * time.Millisecond

// trainPy is train.py on the model, an epoch three ticks long.
var trainPy = raymodel.TrainPy{Epoch: 3 * tick, Register: 2 * tick, Restart: 2 * tick}

func newFixture(t *testing.T, eng docker.Engine) *fixture {
	t.Helper()
	f := &fixture{t: t, s3: storetest.New(t), rec: &progress.Recorder{}, state: state.Dir(t.TempDir())}
	f.s3.MakeBucket("ray")
	f.env = exercise.Env{Store: f.s3.Client(t, storetest.AccessKey), Engine: eng, Project: "mltrain",
		StateDir: f.state, Reporter: f.rec, JobEnv: map[string]string{"MLTRAIN_ACCELERATOR": "cpu"}}
	f.useRay(raymodel.Config{}, raytest.LabNodes()...)
	f.opts = exercise.Options{Quick: true, Poll: time.Millisecond, Observe: 40 * time.Millisecond,
		Timeout: 10 * time.Second, CheckpointTimeout: 3 * time.Second}
	return f
}

// useRay points the exercises at a new modelled Ray with these nodes, its
// clock moved by tick with each request, its checkpoints in the S3 double.
func (f *fixture) useRay(cfg raymodel.Config, nodes ...raymodel.NodeSpec) {
	f.clock = raytest.NewClock(time.Now())
	cfg.Now = f.clock.Now
	f.ray = raytest.NewModel(f.t, cfg, "", nodes...)
	f.ray.Tick(f.clock, tick)
	f.ray.Storage = s3Storage{s: f.s3, data: &sync.Map{}}
	rc, err := ray.New(ray.Options{Address: f.ray.URL})
	require.NoError(f.t, err)
	f.env.Ray = rc
}

// s3Storage is the S3 double as the storage Ray Train writes checkpoints
// to; the double keeps sizes only, so the bytes a run reads back (its
// snapshot) are kept beside it.
type s3Storage struct {
	s    *storetest.Server
	data *sync.Map
}

func (s s3Storage) Put(bucket, key string, data []byte) error {
	s.s.Put(bucket, key, int64(len(data)), time.Now())
	s.data.Store(bucket+"/"+key, data)
	return nil
}

func (s s3Storage) Get(bucket, key string) ([]byte, bool, error) {
	if !slices.Contains(s.s.Keys(bucket, key), key) {
		return nil, false, nil
	}
	d, ok := s.data.Load(bucket + "/" + key)
	if !ok {
		return nil, false, fmt.Errorf("s3://%s/%s: put by the test without its bytes", bucket, key)
	}
	return d.([]byte), true, nil
}

func (s s3Storage) Delete(bucket, key string) error {
	s.s.Delete(bucket, key)
	s.data.Delete(bucket + "/" + key)
	return nil
}

func event(kind string, at time.Time, fields string) string {
	return fmt.Sprintf("\x1b[36m(RayTrainWorker pid=77, ip=x)\x1b[0m MLTRAIN_EVENT {\"event\":%q,\"time\":%.3f%s}\n",
		kind, float64(at.UnixNano())/1e9, fields)
}

func workerEvent(rank int, ip string, at time.Time) string {
	return event("worker", at, fmt.Sprintf(`,"rank":%d,"node_ip":%q,"gpu":{"name":"A100"}`, rank, ip))
}

const resultOK = "MLTRAIN_RESULT {\"mode\":\"plain\",\"fit_seconds\":12.5,\"test\":{\"test_accuracy\":0.9}}\n"

// lifecycle is a job whose driver prints running when Ray starts it and
// final a few polls later, then exits: 0 for SUCCEEDED, 1 for FAILED.
func lifecycle(running, final string, status ray.JobStatus) func(*raymodel.Job) raymodel.Program {
	code := map[ray.JobStatus]int{ray.Failed: 1}[status]
	return raytest.Script{Start: running, End: final, Run: 3 * tick, Code: code}.Program
}

func TestSubmitSucceeds(t *testing.T) {
	f := newFixture(t, nil)
	f.ray.Run = lifecycle(workerEvent(0, "172.18.0.3", time.Now()), "epoch 1\n"+resultOK, ray.Succeeded)
	rec, err := exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.NoError(t, err)
	assert.True(t, rec.OK)
	require.Len(t, rec.Jobs, 1)
	assert.Equal(t, ray.Succeeded, rec.Jobs[0].Status)
	assert.Equal(t, []string{"172.18.0.3"}, rec.Jobs[0].NodeIPs)
	assert.Contains(t, rec.Observed, "SUCCEEDED")
	assert.NotEmpty(t, rec.Look)
	assert.Contains(t, rec.Look[0], f.ray.URL+"/#/jobs/"+rec.Jobs[0].SubmissionID)

	// What reached Ray: the nodes (to fit the requests to the workers),
	// the workspace uploaded once, pinned again right before the job (as
	// 'ray job submit' does), then the job with the course's resources
	// (the lab's workers hold them) and train.py's flags.
	calls := f.ray.Calls()
	require.GreaterOrEqual(t, len(calls), 6)
	assert.Equal(t, "GET /api/version", calls[0])
	assert.True(t, strings.HasPrefix(calls[1], "GET /api/v0/nodes"), calls[1])
	assert.True(t, strings.HasPrefix(calls[2], "GET /api/packages/gcs/_ray_pkg_"), calls[2])
	assert.True(t, strings.HasPrefix(calls[3], "PUT /api/packages/gcs/_ray_pkg_"), calls[3])
	assert.True(t, strings.HasPrefix(calls[4], "GET /api/packages/gcs/_ray_pkg_"), "the pin before the submission: %s", calls[4])
	assert.Equal(t, "POST /api/jobs/", calls[5])
	require.NotNil(t, rec.Sizing)
	assert.Equal(t, exercise.Sizing{Course: 8, Asked: 8, NodeCPUs: rec.Sizing.NodeCPUs}, *rec.Sizing)
	assert.Equal(t, []string{"quick"}, rec.Conditions(), "the course's sizing on a GPU lab: only --quick is a condition")
	job, ok := f.ray.Job(rec.Jobs[0].SubmissionID)
	require.True(t, ok)
	assert.Equal(t, 1.0, job.Request.EntrypointNumGPUs)
	assert.Equal(t, 8.0, job.Request.EntrypointNumCPUs)
	assert.Equal(t, "python train.py --mode plain --quick", job.Request.Entrypoint)
	env := job.Request.RuntimeEnv
	assert.Regexp(t, `^gcs://_ray_pkg_[0-9a-f]{16}\.zip$`, env["working_dir"])
	assert.Equal(t, map[string]any{"packages": []any{"torch", "torchvision", "lightning", "boto3", "s3fs"}, "pip_check": false}, env["pip"])
	vars := env["env_vars"].(map[string]any)
	assert.Equal(t, "cpu", vars["MLTRAIN_ACCELERATOR"], "Env.JobEnv reaches the job")
	assert.Equal(t, "/mnt/Food-11", vars["FOOD11_DATA_DIR"], "runtime.json's env_vars are kept")

	// The default workspace was created in the state dir, and the record saved.
	_, err = os.Stat(f.state.File("workspace/train.py"))
	require.NoError(t, err)
	saved, err := exercise.LoadRecord(f.state, "submit")
	require.NoError(t, err)
	assert.True(t, saved.OK)
	assert.Equal(t, rec.Jobs[0].SubmissionID, saved.Jobs[0].SubmissionID)
	assert.True(t, f.rec.Has("lab submit", progress.Done))
}

func TestSubmitFailedJobShowsLogTail(t *testing.T) {
	f := newFixture(t, nil)
	var logs strings.Builder
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&logs, "line %d\n", i)
	}
	logs.WriteString("RuntimeError: Food-11 not found at /mnt/Food-11\n")
	f.ray.Run = lifecycle("", logs.String(), ray.Failed)
	rec, err := exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "FAILED")
	assert.Contains(t, err.Error(), "Food-11 not found")
	assert.Contains(t, err.Error(), "line 79")
	assert.NotContains(t, err.Error(), "line 20\n", "only the last 50 lines")
	assert.False(t, rec.OK)
	saved, lerr := exercise.LoadRecord(f.state, "submit")
	require.NoError(t, lerr)
	assert.False(t, saved.OK)
	assert.Contains(t, saved.Error, "FAILED")
}

func TestSubmitWithoutResultLineIsNotObserved(t *testing.T) {
	f := newFixture(t, nil)
	f.ray.Run = lifecycle("", "bye\n", ray.Succeeded)
	rec, err := exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.False(t, rec.OK)
	assert.Contains(t, strings.Join(rec.Problems, " "), "MLTRAIN_RESULT")
}

func TestUnknownExerciseAndMissingWorkspace(t *testing.T) {
	f := newFixture(t, nil)
	_, err := exercise.Run(context.Background(), f.env, "nope", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown exercise")

	f.env.Workspace = t.TempDir() // exists, but no train.py
	_, err = exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no train.py")
	assert.Empty(t, f.ray.CallsWithPrefix("POST"), "nothing submitted")
}

func labNodes(gpusPerWorker float64) []ray.Node {
	return []ray.Node{
		{NodeID: "head", NodeIP: "172.18.0.2", IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 4}},
		{NodeID: "w0", NodeIP: "172.18.0.3", State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": gpusPerWorker}},
		{NodeID: "w1", NodeIP: "172.18.0.4", State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": 1}},
	}
}

func TestInfeasibleKeepLeavesItPending(t *testing.T) {
	f := newFixture(t, nil) // the lab's nodes: one GPU each
	f.opts.Keep = true
	rec, err := exercise.Run(context.Background(), f.env, "infeasible", f.opts)
	require.NoError(t, err)
	job, _ := f.ray.Job(rec.Jobs[0].SubmissionID)
	assert.Equal(t, ray.Pending, job.Status)
	assert.Empty(t, f.ray.CallsWithPrefix("POST /api/jobs/"+rec.Jobs[0].SubmissionID+"/stop"))
}

func TestInfeasibleOnABigNodeIsNotObserved(t *testing.T) {
	f := newFixture(t, nil)
	f.useRay(raymodel.Config{})
	f.ray.JoinNodes(labNodes(2)...) // a node with 2 GPUs: the job can run
	rec, err := exercise.Run(context.Background(), f.env, "infeasible", f.opts)
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.False(t, rec.Infeasible.StayedPending)
	probs := strings.Join(rec.Problems, "\n")
	assert.Contains(t, probs, "left PENDING")
	assert.Contains(t, probs, "has 2 GPUs")
	assert.Contains(t, probs, "did not list")
}

func labEngine() *fake.Engine {
	eng := fake.New()
	for i, ip := range []string{"172.18.0.3", "172.18.0.4"} {
		eng.AddContainer(docker.ContainerDetails{
			Container: docker.Container{Name: fmt.Sprintf("ray-worker-%d", i), State: "running",
				Labels: map[string]string{labels.Role: labels.RoleWorker, labels.Project: "mltrain", labels.WorkerIndex: fmt.Sprint(i)}},
			Running: true, Networks: map[string]string{"mltrain": ip},
		})
	}
	eng.AddContainer(docker.ContainerDetails{
		Container: docker.Container{Name: "ray-head", State: "running", Labels: map[string]string{labels.Role: "head", labels.Project: "mltrain"}},
		Running:   true, Networks: map[string]string{"mltrain": "172.18.0.2"},
	})
	// Another lab on the same host, on another network with a clashing address.
	eng.AddContainer(docker.ContainerDetails{
		Container: docker.Container{Name: "other-ray-worker-0", State: "running",
			Labels: map[string]string{labels.Role: labels.RoleWorker, labels.Project: "other"}},
		Running: true, Networks: map[string]string{"other": "172.18.0.4"},
	})
	return eng
}

func TestMultiUsesBothWorkers(t *testing.T) {
	f := newFixture(t, labEngine())
	f.ray.Run = trainPy.Program
	rec, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.NoError(t, err)
	assert.Equal(t, []string{"172.18.0.3", "172.18.0.4"}, rec.Jobs[0].NodeIPs)
	assert.Equal(t, []string{"ray-worker-0", "ray-worker-1"}, rec.Jobs[0].Containers)
	job, _ := f.ray.Job(rec.Jobs[0].SubmissionID)
	assert.Contains(t, job.Request.Entrypoint, "--mode ray --workers 2 --gpu-fraction 1 --cpus-per-worker 8 --quick --run-name "+rec.Jobs[0].SubmissionID)
	assert.Zero(t, job.Request.EntrypointNumGPUs, "the driver stays on the head; the workers take the GPUs")
}

// Worker 0 has two GPUs: the placement group (PACK) puts both workers there.
func TestMultiOnOneNodeIsNotObserved(t *testing.T) {
	f := newFixture(t, labEngine())
	f.useRay(raymodel.Config{})
	f.ray.JoinNodes(labNodes(2)...)
	f.ray.Run = trainPy.Program
	rec, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.Contains(t, strings.Join(rec.Problems, " "), "1 node(s)")
}

// Ray's hybrid policy places the three half-GPU jobs on worker 0, on
// worker 1 (worker 0 at the spread threshold), then on worker 0 again.
func TestFractionalMeasuresMakespanAndSharing(t *testing.T) {
	f := newFixture(t, labEngine())
	f.ray.Run = trainPy.Program
	rec, err := exercise.Run(context.Background(), f.env, "fractional", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	require.Len(t, rec.Jobs, 4)
	obs := rec.Fractional
	require.NotNil(t, obs)
	assert.Equal(t, "ray-worker-0", obs.SharedNode)
	assert.Len(t, obs.JobsByNode["ray-worker-0"], 2)
	assert.Len(t, obs.JobsByNode["ray-worker-1"], 1)
	assert.GreaterOrEqual(t, obs.MaxConcurrent, 2)
	assert.Greater(t, obs.MakespanSeconds, 0.0)
	assert.Greater(t, obs.AloneSeconds, 0.0)
	assert.InDelta(t, obs.MakespanSeconds/obs.AloneSeconds, obs.Ratio, 1e-9)
	for _, j := range rec.Jobs {
		job, _ := f.ray.Job(j.SubmissionID)
		assert.Contains(t, job.Request.Entrypoint, "--gpu-fraction 0.5 --cpus-per-worker 4")
	}
}

func TestAllStopsWhenRayIsUnreachable(t *testing.T) {
	f := newFixture(t, nil)
	f.ray.Close()
	recs, err := exercise.All(context.Background(), f.env, f.opts)
	require.ErrorIs(t, err, ray.ErrUnreachable)
	assert.Len(t, recs, 1, "no point trying the other exercises")
}

func TestCPUsOverride(t *testing.T) {
	f := newFixture(t, nil)
	f.opts.CPUs = 2
	f.ray.Run = lifecycle("", resultOK, ray.Succeeded)
	rec, err := exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.NoError(t, err)
	job, _ := f.ray.Job(rec.Jobs[0].SubmissionID)
	assert.Equal(t, 2.0, job.Request.EntrypointNumCPUs)
}

func TestParseLog(t *testing.T) {
	logs := "hello\n" +
		"(RayTrainWorker pid=1, ip=10.0.0.3) MLTRAIN_EVENT {\"event\":\"worker\",\"time\":1.5,\"rank\":1,\"node_ip\":\"10.0.0.3\"} [repeated 2x across cluster]\n" +
		"MLTRAIN_EVENT not json\n" +
		"MLTRAIN_RESULT {\"mode\":\"plain\"}\n" +
		"MLTRAIN_RESULT {\"mode\":\"ray\",\"ok\":false,\"error\":\"boom\"}\n"
	events, res := exercise.ParseLog(logs)
	require.Len(t, events, 1)
	assert.Equal(t, 1, events[0].Rank)
	assert.Equal(t, time.Unix(1, 5e8), events[0].At())
	require.NotNil(t, res)
	assert.Equal(t, "ray", res.Mode, "the last result line wins")
	assert.False(t, res.Succeeded())
	_, none := exercise.ParseLog("nothing")
	assert.Nil(t, none)
	assert.False(t, none.Succeeded())
}

func TestLoadRecordsSkipsExercisesNeverRun(t *testing.T) {
	dir := state.Dir(t.TempDir())
	require.NoError(t, exercise.SaveRecord(dir, exercise.Record{Exercise: "tune", OK: true}))
	recs, err := exercise.LoadRecords(dir)
	require.NoError(t, err)
	assert.Len(t, recs, 1)
	assert.True(t, recs["tune"].OK)
	_, err = exercise.LoadRecord(dir, "fault")
	assert.True(t, errors.Is(err, os.ErrNotExist))
	info, err := os.Stat(dir.File(state.RecordFile("tune")))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// On a lab that spans hosts a host's nodes share its address: two workers
// at one address but with two node ids are two nodes. With two GPUs on
// nodeA, the placement group packs both workers there: one node.
func TestMultiCountsNodesByIDOnASharedAddress(t *testing.T) {
	f := newFixture(t, labEngine())
	f.env.NodeIP = "10.52.0.7"
	shared := func(gpusOnA float64) {
		f.useRay(raymodel.Config{})
		f.ray.JoinNodes(ray.Node{NodeID: "head", NodeIP: "10.52.0.7", IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 4}},
			ray.Node{NodeID: "nodeA", NodeIP: "10.52.0.7", State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": gpusOnA}},
			ray.Node{NodeID: "nodeB", NodeIP: "10.52.0.7", State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": 1}})
		f.ray.Run = trainPy.Program
	}
	shared(1)
	rec, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	assert.Equal(t, []string{"nodeA", "nodeB"}, rec.Jobs[0].NodeIDs)

	shared(2)
	rec, err = exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.Contains(t, strings.Join(rec.Problems, " "), "1 node(s)")
}
