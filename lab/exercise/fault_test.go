package exercise_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
)

// The lab engine's workers (labEngine).
const (
	w0IP = "172.18.0.3" // ray-worker-0
	w1IP = "172.18.0.4" // ray-worker-1
)

// labWorkers are labEngine's worker containers by address.
var labWorkers = map[string]string{w0IP: "ray-worker-0", w1IP: "ray-worker-1"}

// trainRun plays the fault exercise's Ray Train job on the double: training
// starts on nodes[0]; checkpoints go to the S3 double; a node is down when
// its container (by address, as it was before any stop: a stopped
// container has none) is not running.
func trainRun(f *fixture, eng docker.Engine, containers map[string]string, nodes ...string) *raytest.TrainRun {
	run := &raytest.TrainRun{Nodes: nodes, Epochs: 10, EpochPolls: 3, RegisterPolls: 2,
		Put:    func(bucket, key string) { f.s3.Put(bucket, key, 9<<20, time.Now()) },
		Delete: func(bucket, key string) { f.s3.Delete(bucket, key) },
		Down: func(ip string) bool {
			name, ok := containers[ip]
			if !ok {
				return false
			}
			d, err := eng.ContainerInspect(context.Background(), name)
			return err == nil && !d.Running
		}}
	f.ray.OnPoll = run.Step
	return run
}

func names(cps []raytest.Checkpoint, id string) []string {
	var out []string
	for _, c := range cps {
		out = append(out, id+"/"+c.Name)
	}
	return out
}

func TestFaultStopsTheTrainingWorkerAndRestartsIt(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	obs := rec.Fault
	require.NotNil(t, obs)
	id := rec.Jobs[0].SubmissionID
	assert.Equal(t, "ray-worker-1", obs.StoppedContainer, "the container whose address is the training node")
	assert.Equal(t, w1IP, obs.TrainingNodeIP)
	assert.Equal(t, "ray-worker-0", obs.ResumedContainer)
	assert.Equal(t, id+"/checkpoint_epoch_000000", obs.LatestAtStop, "the first checkpoint Ray registered")
	assert.Equal(t, obs.LatestAtStop, obs.ResumedFrom)
	assert.True(t, obs.CheckpointInMinIO)
	assert.True(t, obs.ResumedFromLatest)
	assert.True(t, obs.Restarted)
	assert.GreaterOrEqual(t, obs.RecoverySeconds, 0.0)
	assert.Contains(t, rec.Observed, "resumed on ray-worker-0 from "+id+"/checkpoint_epoch_000000")

	assert.Equal(t, []string{"ray-worker-1"}, eng.CallsOf("stop"), "only the training worker is stopped, once")
	assert.Equal(t, []string{"ray-worker-1"}, eng.CallsOf("start"), "and started again")
	var order []string
	for _, c := range eng.Calls {
		if strings.HasPrefix(c, "stop ") || strings.HasPrefix(c, "start ") {
			order = append(order, c)
		}
	}
	assert.Equal(t, []string{"stop ray-worker-1", "start ray-worker-1"}, order)
	d, _ := eng.ContainerInspect(context.Background(), "ray-worker-1")
	assert.True(t, d.Running)

	job, _ := f.ray.Job(id)
	assert.Contains(t, job.Request.Entrypoint, "--max-failures 2")
	assert.Contains(t, job.Request.Entrypoint, "--epochs 10")
	assert.Contains(t, job.Request.Entrypoint, "--run-name "+id)
	assert.Zero(t, job.Request.EntrypointNumGPUs, "the driver stays on the head: stopping a worker must not kill it")
	assert.Len(t, run.Registered(id), 10, "the run finished its 10 epochs, epoch 0 once")
}

// Ray uploads a checkpoint before its controller registers it: a worker
// stopped in between makes Ray start again from scratch, so the exercise
// must wait for train.py's "checkpoint" event, not for objects in MinIO.
func TestFaultStopsOnlyAfterRayRegisteredACheckpoint(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.RegisterPolls = 8 // the objects sit in MinIO for 8 polls, unregistered
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	id := rec.Jobs[0].SubmissionID
	obs := rec.Fault
	assert.Equal(t, id+"/checkpoint_epoch_000000", obs.ResumedFrom, "Ray resumed from the checkpoint registered before the stop")
	assert.Equal(t, obs.LatestAtStop, obs.ResumedFrom)
	assert.Contains(t, names(run.Registered(id), id), obs.LatestAtStop)
}

// train.py keeps the 2 newest checkpoints: by the end of the job the one
// training resumed from is gone from MinIO, and the run is still correct.
func TestFaultPassesWhenRetentionDeletesTheResumedCheckpoint(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.Keep, run.RegisterPolls = 2, 0
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	id := rec.Jobs[0].SubmissionID
	obs := rec.Fault
	assert.Equal(t, id+"/checkpoint_epoch_000000", obs.ResumedFrom)
	assert.True(t, obs.CheckpointInMinIO, "it was in MinIO when training resumed from it")
	assert.Equal(t, []string{id + "/checkpoint_epoch_000008", id + "/checkpoint_epoch_000009"}, obs.Checkpoints,
		"retention kept the 2 newest")
	assert.NotContains(t, f.s3.Keys("ray", id+"/"), id+"/checkpoint_epoch_000000/checkpoint.ckpt")
}

// A workspace whose train.py predates the checkpoint events: the exercise
// cannot tell a registered checkpoint, so it stops nothing and says why.
func TestFaultWithAnOlderTrainPyStopsNothing(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.Unannounced = true
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no \"checkpoint\" event")
	assert.Contains(t, err.Error(), "train.py")
	assert.Empty(t, eng.CallsOf("stop"))
	assert.False(t, rec.OK)
	f.ray.SetStatus(rec.Jobs[0].SubmissionID, "STOPPED", "cleanup")
}

func TestFaultWithoutCheckpointNeverStopsAWorker(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	f.opts.CheckpointTimeout = 100 * time.Millisecond
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.EpochPolls = 1 << 30 // the first epoch never ends
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Ray Train registered no checkpoint")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, eng.CallsOf("stop"))
	assert.False(t, rec.OK)
	f.ray.SetStatus(rec.Jobs[0].SubmissionID, "STOPPED", "cleanup")
}

func TestFaultUnidentifiedWorker(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, "10.9.9.9", w0IP)
	_, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no worker container has Ray node 10.9.9.9's address")
	assert.Contains(t, err.Error(), "ray-worker-0 (172.18.0.3)")
	assert.Empty(t, eng.CallsOf("stop"))
}

// Ray runs a driver whose entrypoint asks for no resources on the head; one
// on the training node would die with it, so nothing is stopped then.
func TestFaultRefusesToStopTheDriversNode(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP, w0IP)
	f.ray.OnSubmit = func(_ string, j *raytest.Job) string {
		j.DriverNodeID = "node-" + w1IP // as the double names the nodes TrainRun trains on
		return ""
	}
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "driver runs on ray-worker-1 (172.18.0.4), the node that trains")
	assert.Empty(t, eng.CallsOf("stop"))
	f.ray.SetStatus(rec.Jobs[0].SubmissionID, "STOPPED", "cleanup")
}

// On the host network Ray may attach the driver (running on the head) to a
// worker's raylet; train.py says which, and that worker is never stopped.
func TestFaultRefusesToStopTheNodeTheDriverIsAttachedTo(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.DriverAttached = w1IP
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "driver is attached to the raylet of ray-worker-1 (172.18.0.4), the node that trains")
	assert.Contains(t, clierr.Hint(err), "mltrain lab fault")
	assert.Empty(t, eng.CallsOf("stop"))
	f.ray.SetStatus(rec.Jobs[0].SubmissionID, "STOPPED", "cleanup")

	// Attached to the other worker: training moves there, and the driver lives.
	eng = labEngine()
	f = newFixture(t, eng)
	run = trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.DriverAttached = w0IP
	rec, err = exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	assert.Equal(t, "ray-worker-1", rec.Fault.StoppedContainer)
}

func TestFaultResumeFromAnUnreportedCheckpointIsNotObserved(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.ResumeFrom = func([]raytest.Checkpoint) *raytest.Checkpoint {
		return &raytest.Checkpoint{Name: "checkpoint_epoch_000007", Epoch: 7}
	}
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	problems := strings.Join(rec.Problems, "\n")
	assert.Contains(t, problems, "checkpoint_epoch_000007, which Ray Train never reported")
	assert.False(t, rec.Fault.CheckpointInMinIO)
	// The run's verdict is the registry's judge of its record: what
	// `mltrain verify` reaches later from the same record.
	fault, _ := exercise.Lookup("fault")
	judged := fault.Judge(rec)
	require.Len(t, judged, 2, "never reported, and not in MinIO")
	assert.Equal(t, judged, rec.Problems)
	assert.True(t, rec.Fault.Restarted, "the worker is started again even when the lesson failed")
	assert.Equal(t, []string{"ray-worker-1"}, eng.CallsOf("start"))
}

func TestFaultNeedsEngineAndStore(t *testing.T) {
	f := newFixture(t, nil)
	_, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Docker engine")
	f.env.Engine = labEngine()
	f.env.Store = nil
	_, err = exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MinIO")
}

// A lab whose nodes span hosts: training that Ray placed on a joined host's
// node cannot be stopped from here, and the exercise says so, stopping
// nothing.
func TestFaultSaysWhenTrainingRunsOnAnotherHost(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	f.env.NodeIP = "10.52.0.7"
	remote := "10.52.0.8"
	f.ray.SetNodes([]ray.Node{
		{NodeID: "head", NodeIP: "10.52.0.7", IsHeadNode: true, State: "ALIVE"},
		{NodeID: "node-" + remote, NodeIP: remote, State: "ALIVE", ResourcesTotal: map[string]float64{"GPU": 1},
			Labels: map[string]string{labels.RayNodeLab: "mltrain", labels.RayNodeService: "ray-worker-0"}},
	})
	trainRun(f, eng, labWorkers, remote, w0IP)
	_, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at 10.52.0.8, a host that joined the lab")
	assert.Contains(t, clierr.Hint(err), "mltrain lab fault")
	assert.Empty(t, eng.CallsOf("stop"), "nothing of this host was stopped")
}
