package exercise

import (
	"context"
	"fmt"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
)

func runInfeasible(ctx context.Context, r *runner) error {
	nodes, err := r.env.Ray.Nodes(ctx)
	if err != nil {
		return err
	}
	maxGPU, _ := ray.MaxGPUsPerNode(nodes)
	obs := &InfeasibleObs{MaxGPUsPerNode: maxGPU, Nodes: nodes, Requested: map[string]float64{"GPU": 2, "CPU": r.cpus()}}
	for _, n := range nodes {
		if n.Alive() {
			obs.AliveNodes++
		}
	}
	r.rec.Infeasible = obs
	i, err := r.submit(ctx, jobSpec{args: r.trainArgs("--mode", "plain"), gpus: 2, cpus: r.cpus()})
	if err != nil {
		return err
	}
	id := r.rec.Jobs[i].SubmissionID
	r.look(r.rec.Jobs[i].URL, r.dashboard("/#/cluster"))
	start := r.env.Now()
	obs.StayedPending = true
	var last ray.Job
	for {
		j, err := r.env.Ray.Job(ctx, id)
		if err != nil {
			return err
		}
		last = j
		obs.JobMessage = j.Message
		if j.Status != ray.Pending {
			obs.StayedPending = false
			break
		}
		if obs.Demand == nil {
			if text, err := r.env.Ray.ClusterStatus(ctx); err == nil {
				obs.ClusterStatus = text
				if d, ok := ray.FindDemand(ray.ParseDemands(text), map[string]float64{"GPU": 2}); ok {
					obs.Demand = &d
					obs.DemandSeenAfter = r.env.Now().Sub(start).Seconds()
					r.say("cluster status lists the demand: %s", d.Line)
				}
			}
		}
		obs.PendingSeconds = r.env.Now().Sub(start).Seconds()
		if r.env.Now().Sub(start) >= r.o.Observe {
			break
		}
		r.say("%s PENDING for %.0fs of %s", id, obs.PendingSeconds, r.o.Observe)
		if err := sleep(ctx, r.o.Poll); err != nil {
			return err
		}
	}
	obs.Kept = r.o.Keep
	if !r.o.Keep && !last.Status.Terminal() {
		if last, err = r.endUnplaced(ctx, last, obs); err != nil {
			return err
		}
	}
	r.fill(ctx, i, last)
	r.number("seconds PENDING (observed)", obs.PendingSeconds, "s")
	r.number("most GPUs on one alive node", obs.MaxGPUsPerNode, "")
	if obs.Demand != nil {
		r.number("demand listed after", obs.DemandSeenAfter, "s")
	}
	demand := "no demand line"
	if obs.Demand != nil {
		demand = "cluster status lists \"" + obs.Demand.Line + "\""
	}
	r.rec.Observed = fmt.Sprintf("job stayed PENDING for %.0fs (message: %q); at most %.0f GPU per alive node (%d alive); %s",
		obs.PendingSeconds, obs.JobMessage, maxGPU, obs.AliveNodes, demand)
	switch {
	case r.o.Keep:
		r.rec.Observed += "; the job was left pending (--keep): end it by killing its supervisor actor (" + ray.SupervisorActorName(id) + ") on the dashboard's Actors page; 'ray job stop' may leave it PENDING until Ray's start timeout fails it"
	case obs.StoppedAfter:
		r.rec.Observed += fmt.Sprintf("; then ended it by %s (Ray: %s %s)", obs.EndedBy, last.Status, last.ErrorType)
	}
	return nil
}

// endUnplaced ends a job whose supervisor actor Ray never placed. Ray's
// stop does nothing for it (JobManager.stop_job calls stop on the
// supervisor actor, a call queued behind an actor that never starts), and
// the job would stay PENDING for RAY_JOB_START_TIMEOUT_SECONDS (900 s).
// Killing the supervisor actor through the dashboard's actor API ends it:
// the job monitor marks it FAILED (JOB_SUPERVISOR_ACTOR_DIED) within its
// 1 s loop. That works on any Ray 2.54 cluster, mltrain's or not. See
// docs/ray-fidelity.md.
// A job that did start (a node had 2 GPUs after all) is stopped as usual.
func (r *runner) endUnplaced(ctx context.Context, j ray.Job, obs *InfeasibleObs) (ray.Job, error) {
	id := j.SubmissionID
	var a ray.Actor
	found := false
	if j.Status == ray.Pending {
		var err error
		if a, found, err = r.env.Ray.JobSupervisor(ctx, id); err != nil {
			return ray.Job{}, fmt.Errorf("end the infeasible job %s: %w", id, err)
		}
	}
	if found && a.State != "DEAD" {
		if err := r.env.Ray.KillActor(ctx, a.ActorID); err != nil {
			return ray.Job{}, fmt.Errorf("end the infeasible job %s: %w", id, err)
		}
		obs.EndedBy = "killing its supervisor actor " + a.ActorID
	} else {
		// No live supervisor to kill: ask Ray to stop the job, as
		// 'ray job stop' would.
		if _, err := r.env.Ray.Stop(ctx, id); err != nil {
			return ray.Job{}, err
		}
		obs.EndedBy = "stopping it"
	}
	r.say("ended %s by %s", id, obs.EndedBy)
	wctx, cancel := context.WithTimeout(ctx, endWait)
	defer cancel()
	wl := r.waiting(wctx, "job "+id+" to end after "+obs.EndedBy)
	last, err := r.env.Ray.Wait(wctx, id, ray.WaitOptions{Poll: r.o.Poll, OnPoll: func(j ray.Job) { wl.tick("it is " + string(j.Status)) }})
	if err != nil {
		return last, fmt.Errorf("end the infeasible job %s (by %s): still %s after %s: %w", id, obs.EndedBy, last.Status, endWait, err)
	}
	obs.StoppedAfter = last.Status.Terminal()
	return last, nil
}

// endWait bounds how long a killed supervisor's job may take to turn
// terminal: Ray's job monitor notices within its 1 s loop.
const endWait = 30 * time.Second
