package exercise

import (
	"context"
	"fmt"
	"strings"
)

func runMulti(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "ray", "--workers", "2", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus(8)))
	i, err := r.runJob(ctx, args, "/#/train")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	r.number("job duration", jr.Seconds, "s")
	if jr.Result != nil {
		r.number("training (fit) time", jr.Result.FitSeconds, "s")
	}
	// Nodes by id when reported: on a lab that spans hosts a host's nodes
	// share its address.
	nodes := jr.NodeIDs
	if len(nodes) == 0 {
		nodes = jr.NodeIPs
	}
	r.number("distinct worker nodes used", float64(len(nodes)), "")
	if len(nodes) < 2 {
		r.problem("the training workers ran on %d node(s) (%s), not on both worker nodes", len(nodes), strings.Join(nodes, ", "))
	}
	r.rec.Observed = fmt.Sprintf("job %s %s in %.0fs; training workers on %s", jr.SubmissionID, jr.Status, jr.Seconds, where(jr))
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}
