package exercise

import (
	"context"
	"fmt"
)

func runTune(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "tune", "--num-samples", fmt.Sprint(r.o.NumSamples),
		"--gpu-fraction", "0.5", "--cpus-per-worker", fmt.Sprint(r.cpus(4)))
	i, err := r.runJob(ctx, args, "/#/cluster")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	res := jr.Result
	if res == nil {
		return r.notObserved()
	}
	obs := &TuneObs{Samples: len(res.Trials), MaxT: res.MaxT, StoppedEarly: res.StoppedEarly,
		Completed: res.Completed, Errored: res.Errored, Best: res.Best, Trials: res.Trials}
	r.rec.Tune = obs
	r.number("trials", float64(obs.Samples), "")
	r.number("stopped early by ASHA", float64(obs.StoppedEarly), "")
	r.number("ran to max_t", float64(obs.Completed), "")
	r.number("job duration", jr.Seconds, "s")
	if obs.Best != nil && obs.Best.ValAccuracy != nil {
		r.number("best val accuracy", *obs.Best.ValAccuracy*100, "%")
	}
	if obs.Samples != r.o.NumSamples {
		r.problem("%d trials reported, %d asked for", obs.Samples, r.o.NumSamples)
	}
	if obs.StoppedEarly == 0 {
		r.problem("ASHA stopped no trial early (%d trials, max_t %d)", obs.Samples, obs.MaxT)
	}
	if obs.Completed == 0 {
		r.problem("no trial ran to max_t %d", obs.MaxT)
	}
	if obs.Best == nil {
		r.problem("no best configuration reported")
	}
	best := "none"
	if b := obs.Best; b != nil {
		best = fmt.Sprintf("batch size %v, dropout %.2f", b.BatchSize, deref(b.DropoutProbability))
		if b.ValAccuracy != nil {
			best += fmt.Sprintf(", val accuracy %.1f%%", *b.ValAccuracy*100)
		}
	}
	r.rec.Observed = fmt.Sprintf("%d trials: %d stopped early by ASHA, %d ran to max_t %d, %d errored; best: %s",
		obs.Samples, obs.StoppedEarly, obs.Completed, obs.MaxT, obs.Errored, best)
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
