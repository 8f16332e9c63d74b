package exercise

import (
	"context"
	"fmt"
)

func runSubmit(ctx context.Context, r *runner) error {
	i, err := r.submit(ctx, jobSpec{args: r.trainArgs("--mode", "plain"), gpus: 1, cpus: r.cpus()})
	if err != nil {
		return err
	}
	r.look(r.rec.Jobs[i].URL)
	if _, err := r.wait(ctx, i); err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	r.number("job duration", jr.Seconds, "s")
	if jr.Result != nil {
		r.number("training (fit) time", jr.Result.FitSeconds, "s")
		if acc, ok := jr.Result.Test["test_accuracy"].(float64); ok {
			r.number("test accuracy", acc*100, "%")
		}
	}
	r.rec.Observed = fmt.Sprintf("job %s %s in %.0fs on %s", jr.SubmissionID, jr.Status, jr.Seconds, jr.Where())
	return nil
}
