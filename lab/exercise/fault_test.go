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
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
)

// The lab engine's head and workers (labEngine).
const (
	headIP = "172.18.0.2"
	w0IP   = "172.18.0.3" // ray-worker-0
	w1IP   = "172.18.0.4" // ray-worker-1
)

// labWorkers are labEngine's worker containers by address.
var labWorkers = map[string]string{w0IP: "ray-worker-0", w1IP: "ray-worker-1"}

// rayEngine is the engine with Ray's raylets in its containers: a stopped
// container's raylet unregisters (SIGTERM), a started one registers again
// as a new node, as `ray start --block` in a container does.
type rayEngine struct {
	docker.Engine
	ray   *raytest.Modelled
	names map[string]string            // container name or ID -> name
	specs map[string]raymodel.NodeSpec // by container name
	nodes map[string]string            // container name -> its raylet's node id
}

func (e *rayEngine) join(name string, spec raymodel.NodeSpec) {
	if name == "" { // another host's node, or none of a container
		e.ray.Join(spec)
		return
	}
	e.names[name], e.specs[name] = name, spec
	if d, err := e.Engine.ContainerInspect(context.Background(), name); err == nil {
		e.names[d.ID] = name
	}
	e.nodes[name] = e.ray.Join(spec)
}

func (e *rayEngine) ContainerStop(ctx context.Context, id string, timeout time.Duration) error {
	err := e.Engine.ContainerStop(ctx, id, timeout)
	if name, ok := e.names[id]; ok && err == nil {
		// docker stop's SIGTERM: the raylet unregisters (Ray's node is DEAD at once).
		e.ray.Unregister(e.nodes[name])
	}
	return err
}

func (e *rayEngine) ContainerStart(ctx context.Context, id string) error {
	err := e.Engine.ContainerStart(ctx, id)
	if name, ok := e.names[id]; ok && err == nil {
		spec := e.specs[name]
		spec.ID = "" // a new raylet is a new node
		// On a bridge network a started container has a new address, and
		// its raylet registers that; on the host network the host's.
		if d, err := e.Engine.ContainerInspect(ctx, id); err == nil && spec.Labels[labels.RayNodeService] == "" {
			for _, ip := range d.Networks {
				if ip != "" {
					spec.IP = ip
				}
			}
		}
		e.nodes[name] = e.ray.Join(spec)
	}
	return err
}

// faultNode is a Ray node of a fault test and the container it runs in
// ("" for none of this engine's).
type faultNode struct {
	container string
	spec      raymodel.NodeSpec
}

// faultRay runs the fault exercise's job on the modelled Ray: train.py as
// raymodel.TrainPy plays it, with Ray's nodes in the engine's containers,
// joined in order (Ray trains on the first free GPU node), checkpoints in
// the S3 double. A test changes the TrainPy it returns before the run.
func faultRay(f *fixture, eng docker.Engine, cfg raymodel.Config, nodes ...faultNode) *raymodel.TrainPy {
	f.useRay(cfg)
	e := &rayEngine{Engine: eng, ray: f.ray, names: map[string]string{}, specs: map[string]raymodel.NodeSpec{}, nodes: map[string]string{}}
	for _, n := range nodes {
		e.join(n.container, n.spec)
	}
	f.env.Engine = e
	tp := trainPy
	f.ray.Run = func(j *raymodel.Job) raymodel.Program { return tp.Program(j) }
	return &tp
}

// trainRun is faultRay on the lab's shape: a CPU head, then a one-GPU
// worker node at each address, in the container containers names for it.
func trainRun(f *fixture, eng docker.Engine, containers map[string]string, ips ...string) *raymodel.TrainPy {
	nodes := []faultNode{{spec: raymodel.NodeSpec{IP: headIP, Head: true, Total: raymodel.Resources{"CPU": 4}}}}
	for _, ip := range ips {
		nodes = append(nodes, faultNode{containers[ip], raymodel.NodeSpec{IP: ip, Total: raymodel.Resources{"CPU": 32, "GPU": 1}}})
	}
	return faultRay(f, eng, raymodel.Config{}, nodes...)
}

// registered lists the checkpoints of run id Ray Train registered, as
// train.py's "checkpoint" events say, "run/checkpoint_epoch_…" each.
func registered(t *testing.T, f *fixture, id string) []string {
	j, ok := f.ray.Job(id)
	require.True(t, ok)
	events, _ := exercise.ParseLog(j.Logs)
	var out []string
	for _, e := range exercise.EventsOf(events, "checkpoint") {
		out = append(out, strings.TrimPrefix(e.Checkpoint, "ray/"))
	}
	return out
}

func TestFaultStopsTheTrainingWorkerAndRestartsIt(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP, w0IP)
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
	assert.Len(t, registered(t, f, id), 10, "the run finished its 10 epochs, epoch 0 once")
}

// Ray uploads a checkpoint before its controller registers it: a worker
// stopped in between makes Ray start again from scratch, so the exercise
// must wait for train.py's "checkpoint" event, not for objects in MinIO.
func TestFaultStopsOnlyAfterRayRegisteredACheckpoint(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.Register = 8 * tick // the objects sit in MinIO for 8 ticks, unregistered
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	id := rec.Jobs[0].SubmissionID
	obs := rec.Fault
	assert.Equal(t, id+"/checkpoint_epoch_000000", obs.ResumedFrom, "Ray resumed from the checkpoint registered before the stop")
	assert.Equal(t, obs.LatestAtStop, obs.ResumedFrom)
	assert.Contains(t, registered(t, f, id), obs.LatestAtStop)
}

// train.py keeps the 2 newest checkpoints (its --keep-checkpoints default
// in ray mode): by the end of the job the one training resumed from is gone
// from MinIO, and the run is still correct.
func TestFaultPassesWhenRetentionDeletesTheResumedCheckpoint(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.Register = time.Nanosecond // registered as soon as uploaded
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
	f.ray.Stop(rec.Jobs[0].SubmissionID)
}

func TestFaultWithoutCheckpointNeverStopsAWorker(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	f.opts.CheckpointTimeout = 100 * time.Millisecond
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.Epoch = 24 * time.Hour // the first epoch never ends
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Ray Train registered no checkpoint")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, eng.CallsOf("stop"))
	assert.False(t, rec.OK)
	f.ray.Stop(rec.Jobs[0].SubmissionID)
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
// on the training node would die with it, so nothing is stopped then. A
// Ray told to allow drivers on workers (RAY_JOB_ALLOW_DRIVER_ON_WORKER_NODES)
// whose head is busy past the spread threshold places the driver on the
// first worker, where training goes too.
func TestFaultRefusesToStopTheDriversNode(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	nodes := []faultNode{{spec: raymodel.NodeSpec{IP: headIP, Head: true, Total: raymodel.Resources{"CPU": 4}}}}
	for _, ip := range []string{w1IP, w0IP} {
		nodes = append(nodes, faultNode{labWorkers[ip], raymodel.NodeSpec{IP: ip, Total: raymodel.Resources{"CPU": 32, "GPU": 1}}})
	}
	faultRay(f, eng, raymodel.Config{DriverOnWorkerNodes: true}, nodes...)
	_, err := f.env.Ray.Submit(context.Background(), ray.SubmitRequest{Entrypoint: "sleep 3600", EntrypointNumCPUs: 2})
	require.NoError(t, err)
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "driver runs on ray-worker-1 (172.18.0.4), the node that trains")
	assert.Empty(t, eng.CallsOf("stop"))
	f.ray.Stop(rec.Jobs[0].SubmissionID)
}

// hostNetwork is the lab on the host network: the head and both workers at
// the host's address, first the head, then worker 1 (Ray trains there);
// the driver attaches to the node whose id Ray lists first (attachedTo).
func hostNetwork(t *testing.T, attachedTo string) (*fixture, *fake.Engine) {
	eng := labEngine()
	f := newFixture(t, eng)
	f.env.NodeIP = "10.52.0.7"
	id := func(svc string) string {
		if svc == attachedTo {
			return "0-" + svc
		}
		return "1-" + svc
	}
	node := func(svc string, head bool, res raymodel.Resources) faultNode {
		spec := raymodel.NodeSpec{ID: id(svc), IP: f.env.NodeIP, Head: head, Total: res,
			Labels: map[string]string{labels.RayNodeLab: "mltrain", labels.RayNodeService: svc}}
		if head {
			return faultNode{spec: spec}
		}
		return faultNode{svc, spec}
	}
	gpu := raymodel.Resources{"CPU": 32, "GPU": 1}
	faultRay(f, eng, raymodel.Config{}, node("ray-head", true, raymodel.Resources{"CPU": 4}),
		node("ray-worker-1", false, gpu), node("ray-worker-0", false, gpu))
	return f, eng
}

// On the host network Ray may attach the driver (running on the head) to a
// worker's raylet at the same address; train.py says which, and that
// worker is never stopped.
func TestFaultRefusesToStopTheNodeTheDriverIsAttachedTo(t *testing.T) {
	f, eng := hostNetwork(t, "ray-worker-1")
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "driver is attached to the raylet of ray-worker-1 (10.52.0.7), the node that trains")
	assert.Contains(t, clierr.Hint(err), "mltrain lab fault")
	assert.Empty(t, eng.CallsOf("stop"))
	f.ray.Stop(rec.Jobs[0].SubmissionID)

	// Attached to the other worker: training moves there, and the driver lives.
	f, _ = hostNetwork(t, "ray-worker-0")
	rec, err = exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	assert.Equal(t, "ray-worker-1", rec.Fault.StoppedContainer)
}

func TestFaultResumeFromAnUnreportedCheckpointIsNotObserved(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	run := trainRun(f, eng, labWorkers, w1IP, w0IP)
	run.ResumeFrom = func(int) int { return 7 } // a train.py that loads epoch 7 whatever Ray hands it
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
	faultRay(f, eng, raymodel.Config{},
		faultNode{spec: raymodel.NodeSpec{ID: "head", IP: "10.52.0.7", Head: true, Total: raymodel.Resources{"CPU": 4}}},
		faultNode{spec: raymodel.NodeSpec{ID: "node-" + remote, IP: remote, Total: raymodel.Resources{"CPU": 32, "GPU": 1},
			Labels: map[string]string{labels.RayNodeLab: "mltrain", labels.RayNodeService: "ray-worker-0"}}},
		faultNode{spec: raymodel.NodeSpec{ID: "node-10.52.0.9", IP: "10.52.0.9", Total: raymodel.Resources{"CPU": 32, "GPU": 1},
			Labels: map[string]string{labels.RayNodeLab: "mltrain", labels.RayNodeService: "ray-worker-1"}}})
	_, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at 10.52.0.8, a host that joined the lab")
	assert.Contains(t, clierr.Hint(err), "mltrain lab fault")
	assert.Empty(t, eng.CallsOf("stop"), "nothing of this host was stopped")
}
