package exercise

import (
	"context"
	"fmt"
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
	return nil
}
