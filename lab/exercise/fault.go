package exercise

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/status"
)

// stopTimeout is the worker's grace period, as `docker stop` would give it.
const stopTimeout = 10 * time.Second

// faultRun is one run of the fault exercise: train on one worker, wait until
// Ray Train has registered a checkpoint, stop that worker's container, and
// see Ray Train resume on the other worker from a registered checkpoint.
type faultRun struct {
	r      *runner
	i      int // the job's index in the record
	obs    *FaultObs
	bucket string
	prefix string // the run's key prefix in the bucket
	// inMinIO are the checkpoints MinIO listed at the stop or at any poll
	// until the resume was seen: retention may delete the resumed one soon
	// after the restarted worker has read it.
	inMinIO map[string]bool
}

func runFault(ctx context.Context, r *runner) error {
	if err := faultNeeds(r); err != nil {
		return err
	}
	if err := faultReady(ctx, r); err != nil {
		return err
	}
	i, err := r.submit(ctx, jobSpec{args: faultArgs(r), runName: true})
	if err != nil {
		return err
	}
	id := r.rec.Jobs[i].SubmissionID
	f := &faultRun{r: r, i: i, obs: &FaultObs{Run: id}, bucket: r.env.Bucket, prefix: id + "/"}
	r.rec.Fault = f.obs
	r.look(r.rec.Jobs[i].URL, r.dashboard("/#/cluster"))

	cctx, cancel := context.WithTimeout(ctx, r.o.CheckpointTimeout)
	defer cancel()
	c, err := f.trainingWorker(cctx)
	if err != nil {
		return err
	}
	if err := f.registeredCheckpoint(cctx); err != nil {
		return err
	}
	startAgain, err := f.stop(ctx, c)
	if err != nil {
		return err
	}
	defer startAgain() // whatever happens next, the lab gets its worker back
	resume, events, err := f.awaitResume(ctx, c.Name)
	if err != nil {
		return err
	}
	startAgain()
	if err := f.observeResume(ctx, resume, events); err != nil {
		return err
	}
	if _, err := r.wait(ctx, i); err != nil {
		return err
	}
	return f.conclude(ctx)
}

func faultNeeds(r *runner) error {
	if r.env.Engine == nil {
		return clierr.Hintf("run '"+r.env.Commands.Line("lab", "fault")+"' on the lab's host, where Docker is reachable",
			"the fault exercise stops a worker container: it needs the Docker engine")
	}
	if r.env.Store == nil {
		return clierr.Hintf("pass --minio-endpoint and set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run '"+r.env.Commands.Line("up")+"'",
			"the fault exercise watches checkpoints in MinIO: no MinIO configured")
	}
	return nil
}

func faultArgs(r *runner) []string {
	epochs := r.o.Epochs
	if epochs == 0 && r.o.Quick {
		epochs = 10 // enough quick epochs to stop the worker mid-run
	}
	args := []string{"--mode", "ray", "--workers", "1", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus()), "--max-failures", "2"}
	if r.o.Quick {
		args = append(args, "--quick")
	}
	if r.o.FakeData {
		args = append(args, "--fake-data")
	}
	if epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(epochs))
	}
	return args
}

// trainingWorker finds the container of the node rank 0 trains on (the
// worker says where in its "worker" event).
func (f *faultRun) trainingWorker(ctx context.Context) (status.WorkerContainer, error) {
	r := f.r
	r.await("the training worker to start")
	var worker, driver Event
	err := r.poll(ctx, f.i, func(events []Event) (bool, error) {
		for _, e := range EventsOf(events, "driver") {
			driver = e
		}
		for _, e := range EventsOf(events, "worker") {
			if e.Rank == 0 && e.NodeIP != "" {
				worker = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return status.WorkerContainer{}, r.timeoutHint(err, ctx, "no training worker reported where it runs within "+r.o.CheckpointTimeout.String())
	}
	f.obs.TrainingNodeIP, f.obs.TrainingNodeID = worker.NodeIP, worker.NodeID
	c, err := r.workerOfNode(ctx, worker.NodeID, worker.NodeIP)
	if err != nil {
		return c, err
	}
	// The driver must not share the node: stopping it would end the job.
	// Ray runs it on the head when the entrypoint asks for no resources.
	id := r.rec.Jobs[f.i].SubmissionID
	if j, err := r.env.Ray.Job(ctx, id); err == nil && j.DriverNodeID != "" && j.DriverNodeID == worker.NodeID {
		return c, clierr.Hintf("submit the run without entrypoint resources, so Ray runs its driver on the head",
			"job %s's driver runs on %s (%s), the node that trains: stopping it would end the job, not show fault tolerance", id, c.Name, worker.NodeIP)
	}
	// Where the driver process runs is not all: on the host network (a lab
	// that accepts other hosts) the head and this host's workers share an
	// address, and Ray attaches a driver to any of their raylets (train.py
	// says which); that node's stop ends the driver too.
	if driver.NodeID != "" && driver.NodeID == worker.NodeID {
		return c, clierr.Hintf("run '"+r.env.Commands.Line("lab", "fault")+"' again: Ray places the training on a free GPU, which may be another worker's",
			"job %s's driver is attached to the raylet of %s (%s), the node that trains (Ray hands a driver any node at its address, and on the host network the head shares this host's): stopping it would end the job, not show fault tolerance", id, c.Name, worker.NodeIP)
	}
	r.say("training runs on %s (%s)", c.Name, worker.NodeIP)
	return c, nil
}

// registeredCheckpoint waits until Ray Train has registered a checkpoint of
// the run (train.py's "checkpoint" event) and MinIO lists it. Objects in
// MinIO alone prove nothing: Ray uploads a checkpoint before its controller
// registers it, and a worker stopped in between makes Ray start over.
func (f *faultRun) registeredCheckpoint(ctx context.Context) error {
	r := f.r
	r.await("Ray Train to register a checkpoint")
	err := r.poll(ctx, f.i, func(events []Event) (bool, error) {
		cp, ok := stopPoint(events)
		if !ok {
			if n := len(EventsOf(events, "epoch")); n >= 3 && len(EventsOf(events, "checkpoint")) == 0 {
				return false, clierr.Hintf("remove "+r.trainPy()+" to get the current copy (mltrain writes it again), then run '"+r.env.Commands.Line("lab", "fault")+"' again",
					"%d epochs ended and train.py printed no \"checkpoint\" event: %s is an older copy that does not say when Ray Train has registered a checkpoint, so no worker was stopped",
					n, r.trainPy())
			}
			return false, nil
		}
		f.obs.LatestAtStop, f.obs.StopEpoch, f.obs.RegisteredAtStop = normCheckpoint(cp.Checkpoint, f.bucket), cp.Epoch, true
		f.obs.Registered = registered(events, f.bucket)
		listed, err := f.listed(ctx)
		if err != nil {
			return false, err
		}
		f.inMinIO = listed
		return listed[f.obs.LatestAtStop], nil
	})
	if err != nil {
		what := fmt.Sprintf("Ray Train registered no checkpoint of run %s within %s", f.obs.Run, r.o.CheckpointTimeout)
		if f.obs.LatestAtStop != "" {
			what = fmt.Sprintf("Ray Train registered %s, but MinIO did not list it under s3://%s/%s within %s",
				f.obs.LatestAtStop, f.bucket, f.prefix, r.o.CheckpointTimeout)
		}
		return r.timeoutHint(err, ctx, what)
	}
	return nil
}

// stop stops the training worker; the func it returns starts it again (once).
func (f *faultRun) stop(ctx context.Context, c status.WorkerContainer) (func(), error) {
	r := f.r
	r.say("Ray Train registered checkpoint %s", f.obs.LatestAtStop)
	r.say("%s", stopSays(c.Name))
	f.obs.StoppedAt = r.env.Now()
	if err := r.env.Engine.ContainerStop(context.WithoutCancel(ctx), c.ID, stopTimeout); err != nil { // a signal now must not leave it stopped unsaid
		return func() {}, fmt.Errorf("stop worker container %s: %w", c.Name, err)
	}
	f.obs.StoppedContainer = c.Name
	var once sync.Once
	return func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := r.env.Engine.ContainerStart(sctx, c.ID); err != nil {
				f.obs.RestartError = err.Error()
				again := "docker start " + c.Name // a container without an index label
				if c.Index >= 0 {
					again = r.env.Commands.Line("worker", "start", strconv.Itoa(c.Index))
				}
				r.problem("could not start %s again: %v (run '%s')", c.Name, err, again)
				return
			}
			d, err := r.env.Engine.ContainerInspect(sctx, c.ID)
			f.obs.Restarted = err == nil && d.Running
			if f.obs.Restarted {
				r.say("started %s again", c.Name)
			}
		})
	}, nil
}

// awaitResume waits for a restarted worker's "resume" event; it returns the
// event and the log's events at that moment.
func (f *faultRun) awaitResume(ctx context.Context, stopped string) (Event, []Event, error) {
	r := f.r
	r.await("Ray Train to resume from a checkpoint")
	var resume Event
	var seen []Event
	var seenAt time.Time
	rctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	err := r.poll(rctx, f.i, func(events []Event) (bool, error) {
		if listed, err := f.listed(rctx); err == nil { // best effort: observeResume lists once more and fails on an error
			maps.Copy(f.inMinIO, listed)
		}
		for _, e := range EventsOf(events, "resume") {
			if !e.At().Before(f.obs.StoppedAt.Add(-2 * time.Second)) {
				resume, seen, seenAt = e, events, r.env.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return resume, nil, r.timeoutHint(err, rctx, "training did not resume from a checkpoint after "+stopped+" was stopped")
	}
	// The worker's own timestamp is the precise one; if clocks disagree,
	// fall back to when the log line was seen.
	f.obs.RecoverySeconds = resume.At().Sub(f.obs.StoppedAt).Seconds()
	if f.obs.RecoverySeconds < 0 {
		f.obs.RecoverySeconds = seenAt.Sub(f.obs.StoppedAt).Seconds()
	}
	return resume, seen, nil
}
