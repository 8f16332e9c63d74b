package raymodel

import (
	"fmt"
	"hash/fnv"
	"sort"
	"time"
)

// tuneRun is train.py --mode tune: a Tuner over --num-samples trials, at
// most --max-concurrent-trials at once, each a task asking {GPU: fraction,
// CPU: cpus}, stopped by ASHA (max_t = epochs, grace_period 1,
// reduction_factor 2; tune/schedulers/async_hyperband.py): at each rung a
// trial goes on only if its result is not below the rung's cutoff, the
// (1 - 1/rf) percentile of the results recorded there so far.
type tuneRun struct {
	t       TrainPy
	a       args
	started time.Time
	trials  []*trial
	next    int
	rungs   map[int][]float64 // milestone -> recorded accuracies
}

type trial struct {
	i          int
	alloc      *Alloc
	iterations int
	nextAt     time.Time
	end        string
	acc        float64
}

func (r *tuneRun) Step(d *Driver) (bool, int) {
	if r.started.IsZero() {
		r.started, r.rungs = d.Now, map[int][]float64{}
		d.Log(event("", "start", d.Now, map[string]any{"mode": "tune", "run": r.a.run, "node_ip": d.NodeIP()}))
		d.Log(event("", "driver", d.Now, map[string]any{"mode": "tune", "run": r.a.run, "node_id": d.j.DriverNodeID, "node_ip": d.NodeIP()}))
	}
	running := 0
	for _, t := range r.trials {
		if t.end == "" {
			r.advance(d, t)
		}
		if t.end == "" {
			running++
		}
	}
	for r.next < r.a.samples && running < r.a.concurrent {
		a, ok := d.Acquire(Resources{"GPU": r.a.gpu, "CPU": r.a.cpus})
		if !ok {
			break
		}
		t := &trial{i: r.next, alloc: a, nextAt: d.Now.Add(r.t.Epoch)}
		r.trials = append(r.trials, t)
		r.next++
		running++
		d.Log(event(a.NodeIP, "worker", d.Now, map[string]any{"mode": "tune", "rank": 0, "world_size": 1,
			"node_ip": a.NodeIP, "node_id": a.NodeID, "gpu": map[string]any{"name": "stand-in"}, "run": r.a.run}))
	}
	if r.next < r.a.samples || running > 0 {
		return false, 0
	}
	d.Log(ResultMarker + " " + mustJSON(r.result(d.Now)) + "\n")
	return true, 0
}

// advance runs trial t's iterations that are due.
func (r *tuneRun) advance(d *Driver, t *trial) {
	end, at := "", 0
	if r.t.TrialEnd != nil {
		end, at = r.t.TrialEnd(t.i)
	}
	for t.end == "" && !d.Now.Before(t.nextAt) {
		if t.alloc.Lost() {
			t.end = EndError
			break
		}
		t.iterations++
		t.acc = accuracy(t.i, t.iterations)
		t.nextAt = t.nextAt.Add(r.t.Epoch)
		switch {
		case end == EndError && t.iterations >= at:
			t.end = EndError
		case end == EndScript && t.iterations >= at && t.iterations < r.a.epochs:
			t.end = EndScript
		case t.iterations >= r.a.epochs:
			t.end = EndMaxT
		case r.cut(t):
			t.end = EndScheduler
		}
	}
	if t.end != "" {
		d.Release(t.alloc)
	}
}

// cut records t's result at a rung it just reached and says whether ASHA
// stops it there.
func (r *tuneRun) cut(t *trial) bool {
	for m := 1; m < r.a.epochs; m *= 2 {
		if t.iterations != m {
			continue
		}
		rec := append(r.rungs[m], t.acc)
		r.rungs[m] = rec
		return t.acc < percentile(rec, 50)
	}
	return false
}

// percentile is numpy's nanpercentile with linear interpolation.
func percentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// accuracy is trial i's validation accuracy after n iterations: a fixed
// quality per trial, improving with training.
func accuracy(i, n int) float64 {
	h := fnv.New32a()
	fmt.Fprint(h, i)
	return 0.3 + 0.4*float64(h.Sum32()%1000)/1000 + 0.01*float64(n)
}

func (r *tuneRun) result(now time.Time) map[string]any {
	n := map[string]int{}
	var rows []map[string]any
	var best map[string]any
	for _, t := range r.trials {
		n[t.end]++
		row := map[string]any{"trial_id": fmt.Sprintf("%05d", t.i), "batch_size": 32 << (t.i % 2),
			"dropout_probability": 0.1 + 0.05*float64(t.i%10), "iterations": t.iterations,
			"val_accuracy": t.acc, "val_loss": 1 - t.acc, "error": nil, "end": t.end, "end_from": "callback"}
		if t.end == EndError {
			row["error"], row["val_accuracy"], row["val_loss"] = "RuntimeError: the trial raised", nil, nil
		} else if best == nil || t.acc > best["val_accuracy"].(float64) {
			best = map[string]any{"batch_size": row["batch_size"], "dropout_probability": row["dropout_probability"],
				"val_accuracy": t.acc, "iterations": t.iterations}
		}
		rows = append(rows, row)
	}
	return map[string]any{"mode": "tune", "run": r.a.run, "num_samples": r.a.samples, "max_t": r.a.epochs,
		"ok": n[EndError] == 0 && len(r.trials) > 0, "fit_seconds": round1(now.Sub(r.started)), "trials": rows,
		"best": best, "completed": n[EndMaxT], "stopped_by_scheduler": n[EndScheduler],
		"ended_by_script": n[EndScript], "errored": n[EndError], "stopped_early": n[EndScheduler]}
}
