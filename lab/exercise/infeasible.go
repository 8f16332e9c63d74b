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
	obs := &InfeasibleObs{MaxGPUsPerNode: maxGPU, Nodes: nodes, Requested: map[string]float64{"GPU": 2, "CPU": r.cpus(8)}}
	for _, n := range nodes {
		if n.Alive() {
			obs.AliveNodes++
		}
	}
	r.rec.Infeasible = obs
	i, err := r.submit(ctx, jobSpec{args: r.trainArgs("--mode", "plain"), gpus: 2, cpus: r.cpus(8)})
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
	if !r.o.Keep && !last.Status.Terminal() {
		// The course leaves it pending forever; Ray would fail it after
		// RAY_JOB_START_TIMEOUT_SECONDS (15 min). Clean up now.
		if _, err := r.env.Ray.Stop(ctx, id); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		last, err = r.env.Ray.Wait(wctx, id, ray.WaitOptions{Poll: r.o.Poll})
		cancel()
		if err != nil {
			return fmt.Errorf("stop the infeasible job %s: %w", id, err)
		}
		obs.StoppedAfter = last.Status == ray.Stopped
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
	if r.o.Keep {
		r.rec.Observed += "; the job was left pending (--keep): stop it with 'ray job stop " + id + "'"
	} else if obs.StoppedAfter {
		r.rec.Observed += "; then stopped it"
	}
	return nil
}
