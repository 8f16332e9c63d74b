package exercise

import (
	"context"
	"fmt"

	"github.com/mltrain/mltrain/internal/clierr"
)

func runMulti(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "ray", "--workers", "2", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus()))
	i, err := r.runJob(ctx, args, "/#/cluster")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	r.number("job duration", jr.Seconds, "s")
	if jr.Result != nil {
		r.number("training (fit) time", jr.Result.FitSeconds, "s")
	}
	r.number("distinct worker nodes used", float64(len(jr.trainingNodes())), "")
	r.rec.Observed = fmt.Sprintf("job %s %s in %.0fs; training workers on %s", jr.SubmissionID, jr.Status, jr.Seconds, jr.Where())
	if r.o.Resume == "" {
		return nil
	}
	// Ray Train hands the run's latest checkpoint to its first worker
	// group; train.py says so in a resume event before it trains on.
	resumed := EventsOf(r.events[i], "resume")
	if len(resumed) == 0 {
		return clierr.Hintf("look at the job's log ("+jr.URL+") for Ray Train's 'A run snapshot was found' line",
			"run %s trained from scratch: Ray Train handed it no checkpoint to resume from", r.o.Resume)
	}
	from := resumed[0].Name
	if e := resumed[0].Epoch; e != nil {
		from += fmt.Sprintf(" (epoch %d)", *e)
	}
	r.rec.Observed += fmt.Sprintf("; run %s resumed from %s", r.o.Resume, from)
	return nil
}
