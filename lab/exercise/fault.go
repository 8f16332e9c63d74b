package exercise

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/store"
)

// normCheckpoint turns Ray's checkpoint path ("ray/run/checkpoint_…" or
// "s3://ray/run/checkpoint_…") into the bucket-relative path the store lists.
func normCheckpoint(p, bucket string) string {
	p = strings.TrimPrefix(p, "s3://")
	p = strings.TrimPrefix(p, bucket+"/")
	return strings.TrimRight(p, "/")
}

// stopTimeout is the worker's grace period, as `docker stop` would give it.
const stopTimeout = 10 * time.Second

func runFault(ctx context.Context, r *runner) error {
	if r.env.Engine == nil {
		return clierr.Hintf("run 'mltrain lab fault' on the lab's host, where Docker is reachable",
			"the fault exercise stops a worker container: it needs the Docker engine")
	}
	if r.env.Store == nil {
		return clierr.Hintf("pass --minio-endpoint and set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run 'mltrain up'",
			"the fault exercise watches checkpoints in MinIO: no MinIO configured")
	}
	epochs := r.o.Epochs
	if epochs == 0 && r.o.Quick {
		epochs = 10 // enough quick epochs to stop the worker mid-run
	}
	args := []string{"--mode", "ray", "--workers", "1", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus(8)), "--max-failures", "2"}
	if r.o.Quick {
		args = append(args, "--quick")
	}
	if r.o.FakeData {
		args = append(args, "--fake-data")
	}
	if epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(epochs))
	}
	i, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return err
	}
	id := r.rec.Jobs[i].SubmissionID
	obs := &FaultObs{Run: id}
	r.rec.Fault = obs
	r.look(r.rec.Jobs[i].URL, r.dashboard("/#/cluster"))

	cctx, cancel := context.WithTimeout(ctx, r.o.CheckpointTimeout)
	defer cancel()
	// 1. Which node trains? The worker says so in the log.
	r.say("waiting for the training worker to start")
	var worker Event
	err = r.poll(cctx, i, func(events []Event) (bool, error) {
		for _, e := range EventsOf(events, "worker") {
			if e.Rank == 0 && e.NodeIP != "" {
				worker = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return r.timeoutHint(err, cctx, "no training worker reported where it runs within "+r.o.CheckpointTimeout.String())
	}
	obs.TrainingNodeIP = worker.NodeIP
	// 2. Which container is that node?
	c, err := r.workerByIP(ctx, worker.NodeIP)
	if err != nil {
		return err
	}
	r.say("training runs on %s (%s)", c.Name, worker.NodeIP)
	// 3. A checkpoint must exist before the failure, or there is nothing to resume.
	prefix := id + "/"
	var cps []store.Checkpoint
	err = r.poll(cctx, i, func([]Event) (bool, error) {
		var err error
		cps, err = r.env.Store.ListCheckpoints(cctx, r.env.Bucket, prefix)
		return len(cps) > 0, err
	})
	if err != nil {
		return r.timeoutHint(err, cctx, fmt.Sprintf("no checkpoint appeared in s3://%s/%s within %s", r.env.Bucket, prefix, r.o.CheckpointTimeout))
	}
	obs.LatestAtStop = cps[len(cps)-1].Path
	// 4. Stop the worker, and whatever happens, start it again at the end.
	r.say("checkpoint %s exists: stopping %s", obs.LatestAtStop, c.Name)
	obs.StoppedAt = r.env.Now()
	if err := r.env.Engine.ContainerStop(ctx, c.ID, stopTimeout); err != nil {
		return fmt.Errorf("stop worker container %s: %w", c.Name, err)
	}
	obs.StoppedContainer = c.Name
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := r.env.Engine.ContainerStart(sctx, c.ID); err != nil {
			obs.RestartError = err.Error()
			r.problem("could not start %s again: %v (run 'mltrain worker start')", c.Name, err)
			return
		}
		d, err := r.env.Engine.ContainerInspect(sctx, c.ID)
		obs.Restarted = err == nil && d.Running
		if obs.Restarted {
			r.say("started %s again", c.Name)
		}
	}()
	// 5. Ray should restart training elsewhere from the checkpoint.
	r.say("waiting for Ray Train to resume from a checkpoint")
	var resume Event
	var seenAt time.Time
	rctx, rcancel := context.WithTimeout(ctx, r.o.Timeout)
	defer rcancel()
	err = r.poll(rctx, i, func(events []Event) (bool, error) {
		for _, e := range EventsOf(events, "resume") {
			if !e.At().Before(obs.StoppedAt.Add(-2 * time.Second)) {
				resume, seenAt = e, r.env.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return r.timeoutHint(err, rctx, "training did not resume from a checkpoint after "+c.Name+" was stopped")
	}
	obs.ResumedFrom = normCheckpoint(resume.Checkpoint, r.env.Bucket)
	obs.ResumedOnNodeIP = resume.NodeIP
	if rc, err := r.workerByIP(ctx, resume.NodeIP); err == nil {
		obs.ResumedContainer = rc.Name
	}
	// The worker's own timestamp is the precise one; if clocks disagree,
	// fall back to when the log line was seen.
	obs.RecoverySeconds = resume.At().Sub(obs.StoppedAt).Seconds()
	if obs.RecoverySeconds < 0 {
		obs.RecoverySeconds = seenAt.Sub(obs.StoppedAt).Seconds()
	}
	r.say("resumed on %s from %s after %.0fs", resume.NodeIP, obs.ResumedFrom, obs.RecoverySeconds)
	// 6. The job must finish.
	if _, err := r.wait(ctx, i); err != nil {
		return err
	}
	r.checkFinished(i)
	// 7. The checkpoint it resumed from must be one MinIO holds.
	after, err := r.env.Store.ListCheckpoints(ctx, r.env.Bucket, prefix)
	if err != nil {
		return err
	}
	for _, cp := range after {
		obs.Checkpoints = append(obs.Checkpoints, cp.Path)
		if cp.Path == obs.ResumedFrom {
			obs.CheckpointInMinIO = true
		}
	}
	// A checkpoint may land between the listing and the stop; resuming from
	// it is still resuming from the latest.
	obs.ResumedFromLatest = obs.ResumedFrom >= obs.LatestAtStop
	r.number("seconds from stop to resumed training", obs.RecoverySeconds, "s")
	r.number("checkpoints in MinIO", float64(len(obs.Checkpoints)), "")
	r.number("job duration", r.rec.Jobs[i].Seconds, "s")
	if !obs.CheckpointInMinIO {
		r.problem("training resumed from %q, which is not among the run's checkpoints in MinIO (%s)", obs.ResumedFrom, strings.Join(obs.Checkpoints, ", "))
	}
	if obs.ResumedOnNodeIP == obs.TrainingNodeIP {
		r.problem("training resumed on the stopped node %s", obs.TrainingNodeIP)
	}
	resumedOn := obs.ResumedContainer
	if resumedOn == "" {
		resumedOn = obs.ResumedOnNodeIP
	}
	r.rec.Observed = fmt.Sprintf("stopped %s at checkpoint %s; training resumed on %s from %s after %.0fs; job %s",
		obs.StoppedContainer, obs.LatestAtStop, resumedOn, obs.ResumedFrom, obs.RecoverySeconds, r.rec.Jobs[i].Status)
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}
