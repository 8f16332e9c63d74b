package exercise

import (
	"context"
	"fmt"
)

func runTune(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "tune", "--num-samples", fmt.Sprint(r.o.NumSamples),
		"--gpu-fraction", "0.5", "--cpus-per-worker", fmt.Sprint(r.cpus()))
	i, err := r.runJob(ctx, args, "/#/cluster")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	res := jr.Result
	if res == nil {
		return nil // the judge says the job left no result
	}
	obs := tuneObs(res)
	r.rec.Tune = obs
	r.number("trials", float64(obs.Samples), "")
	if obs.EndsKnown {
		r.number("stopped by ASHA", float64(obs.StoppedByScheduler), "")
		r.number("ended by the script", float64(obs.EndedByScript), "")
	}
	r.number("ran to max_t", float64(obs.Completed), "")
	r.number("errored", float64(obs.Errored), "")
	r.number("job duration", jr.Seconds, "s")
	if obs.Best != nil && obs.Best.ValAccuracy != nil {
		r.number("best val accuracy", *obs.Best.ValAccuracy*100, "%")
	}
	if obs.Samples != r.o.NumSamples { // what was asked is the run's, not the record's
		r.problem("%d trials reported, %d asked for", obs.Samples, r.o.NumSamples)
	}
	best := "none"
	if b := obs.Best; b != nil {
		best = fmt.Sprintf("batch size %v, dropout %.2f", b.BatchSize, deref(b.DropoutProbability))
		if b.ValAccuracy != nil {
			best += fmt.Sprintf(", val accuracy %.1f%%", *b.ValAccuracy*100)
		}
	}
	r.rec.Observed = fmt.Sprintf("%d trials: %s; best: %s", obs.Samples, obs.Counts(), best)
	return nil
}

// tuneObs reads the trials' ends: from each trial when train.py gave them
// (the source of truth), else from its summary counts, else not at all.
func tuneObs(res *Result) *TuneObs {
	obs := &TuneObs{Samples: len(res.Trials), MaxT: res.MaxT, Completed: res.Completed, Errored: res.Errored,
		Best: res.Best, Trials: res.Trials}
	every := len(res.Trials) > 0
	for _, t := range res.Trials {
		every = every && t.End != ""
	}
	switch {
	case every:
		obs.EndsKnown = true
		obs.Completed, obs.Errored = 0, 0
		for _, t := range res.Trials {
			switch t.End {
			case EndMaxT:
				obs.Completed++
			case EndScheduler:
				obs.StoppedByScheduler++
			case EndScript:
				obs.EndedByScript++
			case EndError:
				obs.Errored++
			}
		}
	case res.StoppedByScheduler != nil && res.EndedByScript != nil:
		obs.EndsKnown = true
		obs.StoppedByScheduler, obs.EndedByScript = *res.StoppedByScheduler, *res.EndedByScript
	}
	obs.StoppedEarly = obs.StoppedByScheduler
	return obs
}

// Counts says how the trials ended.
func (obs TuneObs) Counts() string {
	if !obs.EndsKnown {
		return fmt.Sprintf("%d ran to max_t %d, %d ended earlier (by ASHA or on their own: train.py did not say), %d errored",
			obs.Completed, obs.MaxT, obs.Samples-obs.Completed-obs.Errored, obs.Errored)
	}
	return fmt.Sprintf("%d stopped by ASHA, %d ran to max_t %d, %d ended by the script before max_t, %d errored",
		obs.StoppedByScheduler, obs.Completed, obs.MaxT, obs.EndedByScript, obs.Errored)
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
