package verify

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/exercise"
)

// Verify has one check per exercise of the registry, titled by it, and a
// live check for each and no other: an exercise added to verify alone, or
// to the registry without its live check, fails here.
func TestExerciseChecksFollowTheRegistry(t *testing.T) {
	var ids, titles, want, wantTitles []string
	for _, s := range exerciseSpecs() {
		ids, titles = append(ids, s.id), append(titles, s.title)
	}
	for _, ex := range exercise.Exercises() {
		want, wantTitles = append(want, GroupExercises+"."+ex.Name), append(wantTitles, ex.Proves)
	}
	assert.Equal(t, want, ids)
	assert.Equal(t, wantTitles, titles)
	assert.ElementsMatch(t, exercise.Names(), slices.Collect(maps.Keys(liveChecks)))
}

// Verify reaches its verdict on the fault exercise's record by the
// exercise's own Judge: for each way a record falls short, the check's
// evidence is exactly what the judge says, and a record the judge accepts
// goes on to the live checks.
func TestVerifyJudgesFaultByTheExercisesJudge(t *testing.T) {
	fault, ok := exercise.Lookup("fault")
	require.True(t, ok)
	breaks := map[string]func(o *exercise.FaultObs){
		"accepted":          func(*exercise.FaultObs) {},
		"no stop":           func(o *exercise.FaultObs) { o.StoppedContainer = "" },
		"stopped too early": func(o *exercise.FaultObs) { o.RegisteredAtStop = false },
		"no resume":         func(o *exercise.FaultObs) { o.ResumedFrom = "" },
		"unreported":        func(o *exercise.FaultObs) { o.ResumedFromReported = false },
		"older":             func(o *exercise.FaultObs) { o.ResumedFromLatest = false },
		"not in minio":      func(o *exercise.FaultObs) { o.CheckpointInMinIO = false },
		"same node":         func(o *exercise.FaultObs) { o.ResumedOnNodeIP = o.TrainingNodeIP },
		"two at once":       func(o *exercise.FaultObs) { o.CheckpointInMinIO, o.ResumedOnNodeIP = false, o.TrainingNodeIP },
	}
	for name, brk := range breaks {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.recs["fault"]
			obs := *rec.Fault
			brk(&obs)
			rec.Fault = &obs
			f.recs["fault"] = rec

			judged := fault.Judge(rec)
			c := f.checkOf(GroupExercises, "exercises.fault")
			if name == "accepted" {
				require.Empty(t, judged)
				assert.Equal(t, Pass, c.Status, c.Evidence)
				return
			}
			require.NotEmpty(t, judged)
			assert.Equal(t, Fail, c.Status)
			assert.Equal(t, strings.Join(judged, "; "), c.Evidence)
			assert.Equal(t, "mltrain lab fault", c.Fix)
		})
	}
}

// checkOf runs one group's checks and returns one of them.
func (f *fixture) checkOf(group, id string) Check {
	f.t.Helper()
	for _, c := range f.run(Options{Only: []string{group}, Timeout: 5 * time.Second}).Checks {
		if c.ID == id {
			return c
		}
	}
	f.t.Fatalf("no check %s in the report", id)
	return Check{}
}
