package raytest

import (
	"encoding/json"
	"fmt"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// How a Tune trial ends, in train.py's tune MLTRAIN_RESULT ("end").
const (
	EndMaxT      = "max_t"     // ran ASHA's max_t iterations
	EndScheduler = "scheduler" // ASHA stopped it
	EndScript    = "script"    // the training function returned on its own before max_t
	EndError     = "error"     // it raised
)

// TuneTrial is one trial of a Tune run.
type TuneTrial struct {
	End         string
	Iterations  int // reports (epochs) it made
	ValAccuracy float64
}

// TuneResult is the MLTRAIN_RESULT line train.py --mode tune prints for
// these trials under ASHA with max_t: every trial carries its end, and the
// summary counts them (workspace/train.py, tune_counts). A trial's end must
// fit its iterations, as Tune's record makes it: max_t ones ran max_t,
// the others fewer. A Script prints it where a test needs given ends
// (raymodel.TrainPy runs ASHA itself).
func TuneResult(maxT int, trials []TuneTrial) string {
	rows, best := tuneRows(maxT, trials, true)
	n := map[string]int{}
	for _, t := range trials {
		n[t.End]++
	}
	res := map[string]any{"mode": "tune", "run": "tune-run", "num_samples": len(trials), "max_t": maxT,
		"ok": n[EndError] == 0 && len(trials) > 0, "fit_seconds": 120.5, "trials": rows, "best": best,
		"completed": n[EndMaxT], "stopped_by_scheduler": n[EndScheduler], "ended_by_script": n[EndScript],
		"errored": n[EndError], "stopped_early": n[EndScheduler]}
	return raymodel.ResultMarker + " " + mustJSON(res) + "\n"
}

// LegacyTuneResult is the line a train.py older than the per-trial ends
// printed for the same trials: no "end", and "stopped_early" counting every
// trial that ended before max_t without an error, those Lightning's
// EarlyStopping ended included.
func LegacyTuneResult(maxT int, trials []TuneTrial) string {
	rows, best := tuneRows(maxT, trials, false)
	early, done, errored := 0, 0, 0
	for _, t := range trials {
		switch {
		case t.End == EndError:
			errored++
		case t.Iterations >= maxT:
			done++
		default:
			early++
		}
	}
	res := map[string]any{"mode": "tune", "run": "tune-run", "num_samples": len(trials), "max_t": maxT,
		"ok": errored == 0 && len(trials) > 0, "fit_seconds": 120.5, "trials": rows, "best": best,
		"stopped_early": early, "completed": done, "errored": errored}
	return raymodel.ResultMarker + " " + mustJSON(res) + "\n"
}

func tuneRows(maxT int, trials []TuneTrial, withEnd bool) ([]map[string]any, map[string]any) {
	var rows []map[string]any
	var best map[string]any
	bestAcc := -1.0
	for i, t := range trials {
		if (t.End == EndMaxT) != (t.Iterations >= maxT) {
			panic(fmt.Sprintf("raytest: trial %d ends %q after %d of max_t %d iterations: Tune would not record that", i, t.End, t.Iterations, maxT))
		}
		row := map[string]any{"trial_id": fmt.Sprintf("t%05d", i), "batch_size": 32 << (i % 2),
			"dropout_probability": 0.1 + 0.05*float64(i%10), "iterations": t.Iterations,
			"val_accuracy": t.ValAccuracy, "val_loss": 1 - t.ValAccuracy, "error": nil}
		if t.End == EndError {
			row["error"] = "RuntimeError: CUDA out of memory"
			row["val_accuracy"], row["val_loss"] = nil, nil
		} else if t.ValAccuracy > bestAcc {
			bestAcc = t.ValAccuracy
			best = map[string]any{"batch_size": row["batch_size"], "dropout_probability": row["dropout_probability"],
				"val_accuracy": t.ValAccuracy, "iterations": t.Iterations}
		}
		if withEnd {
			row["end"], row["end_from"] = t.End, "callback"
		}
		rows = append(rows, row)
	}
	return rows, best
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
