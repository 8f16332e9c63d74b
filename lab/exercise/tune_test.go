package exercise_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
)

// trials makes n trials ending end after it iterations (max_t is 2 here).
func trials(n int, end string, it int) []raytest.TuneTrial {
	var out []raytest.TuneTrial
	for i := 0; i < n; i++ {
		out = append(out, raytest.TuneTrial{End: end, Iterations: it, ValAccuracy: 0.5 + 0.01*float64(i)})
	}
	return out
}

func runTune(t *testing.T, samples int, result string) (exercise.Record, error) {
	t.Helper()
	f := newFixture(t, nil)
	f.opts.NumSamples = samples
	f.ray.Run = lifecycle("", result, ray.Succeeded)
	rec, err := exercise.Run(context.Background(), f.env, "tune", f.opts)
	job, _ := f.ray.Job(rec.Jobs[0].SubmissionID)
	assert.Contains(t, job.Request.Entrypoint, "--mode tune --num-samples 8 --gpu-fraction 0.5 --cpus-per-worker 4")
	return rec, err
}

func number(rec exercise.Record, name string) (float64, bool) {
	for _, n := range rec.Numbers {
		if n.Name == name {
			return n.Value, true
		}
	}
	return 0, false
}

func TestTuneReportsASHAStopsAndScriptEndsApart(t *testing.T) {
	all := append(append(trials(3, raytest.EndScheduler, 1), trials(2, raytest.EndScript, 1)...), trials(3, raytest.EndMaxT, 2)...)
	rec, err := runTune(t, 8, raytest.TuneResult(2, all))
	require.NoError(t, err, "trials that ended on their own are no failure: %v", rec.Problems)
	assert.Contains(t, rec.Observed, "3 stopped by ASHA")
	assert.Contains(t, rec.Observed, "2 ended by the script before max_t")
	assert.Contains(t, rec.Observed, "3 ran to max_t 2")
	assert.NotContains(t, rec.Observed, "5 stopped", "a trial the script ended is never an ASHA stop")
	v, ok := number(rec, "stopped by ASHA")
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
	v, ok = number(rec, "ended by the script")
	assert.True(t, ok)
	assert.Equal(t, 2.0, v)
	b, err := json.Marshal(rec.Tune)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"stopped_by_scheduler":3`)
	assert.Contains(t, string(b), `"ended_by_script":2`)
	assert.Contains(t, rec.Observed, "val accuracy 52.0%", "the best trial")
}

func TestTuneWithNoASHAStopIsNotObserved(t *testing.T) {
	all := append(trials(5, raytest.EndScript, 1), trials(3, raytest.EndMaxT, 2)...)
	rec, err := runTune(t, 8, raytest.TuneResult(2, all))
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	problems := strings.Join(rec.Problems, " ")
	assert.Contains(t, problems, "ASHA stopped none of the 8 trials")
	assert.Contains(t, problems, "5 ended by the script", "says where the short trials went")
}

func TestTuneWithNoTrialAtMaxTIsNotObserved(t *testing.T) {
	all := append(trials(6, raytest.EndScheduler, 1), trials(2, raytest.EndScript, 1)...)
	rec, err := runTune(t, 8, raytest.TuneResult(2, all))
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.Contains(t, strings.Join(rec.Problems, " "), "no trial ran to max_t 2")
}

// A train.py older than the per-trial ends counted trials Lightning's
// EarlyStopping ended as "stopped_early": they must not pass for ASHA stops.
func TestTuneWithAnOlderTrainPyClaimsNoASHAStop(t *testing.T) {
	all := append(trials(5, raytest.EndScript, 1), trials(3, raytest.EndMaxT, 2)...)
	rec, err := runTune(t, 8, raytest.LegacyTuneResult(2, all))
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	problems := strings.Join(rec.Problems, " ")
	assert.Contains(t, problems, "cannot tell")
	assert.Contains(t, problems, "train.py")
	assert.NotContains(t, rec.Observed, "stopped early by ASHA")
	assert.NotContains(t, rec.Observed, "5 stopped by ASHA")
}

func TestTuneErroredTrialsFailTheRun(t *testing.T) {
	all := append(append(trials(3, raytest.EndScheduler, 1), trials(1, raytest.EndError, 1)...), trials(4, raytest.EndMaxT, 2)...)
	rec, err := runTune(t, 8, raytest.TuneResult(2, all))
	require.ErrorIs(t, err, exercise.ErrNotObserved)
	assert.Contains(t, rec.Observed, "1 errored")
	assert.Contains(t, strings.Join(rec.Problems, " "), "train.py reports failure")
}
