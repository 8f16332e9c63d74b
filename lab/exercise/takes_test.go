package exercise_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

func TestEveryExerciseHasADurationAndQuickIsShorter(t *testing.T) {
	for _, e := range exercise.Exercises() {
		full, quick := e.Estimate(exercise.Options{}), e.Estimate(exercise.Options{Quick: true})
		assert.Positive(t, quick, e.Name)
		assert.GreaterOrEqual(t, full, quick, e.Name)
	}
	// The course's run fits the node's 3-hour lease, a rehearsal is minutes.
	all := exercise.Estimate(exercise.Names(), exercise.Options{})
	assert.Equal(t, 2*time.Hour+22*time.Minute, all)
	assert.Equal(t, 25*time.Minute, exercise.Estimate(exercise.Names(), exercise.Options{Quick: true}))

	submit, _ := exercise.Lookup("submit")
	assert.Equal(t, 15*time.Minute, submit.Estimate(exercise.Options{}))
	assert.Equal(t, 7*time.Minute+30*time.Second, submit.Estimate(exercise.Options{Epochs: 10}), "--epochs scales a training run")
	assert.Equal(t, 30*time.Minute, submit.Estimate(exercise.Options{Epochs: 40}))
	assert.Equal(t, 3*time.Minute, submit.Estimate(exercise.Options{Epochs: 1}), "never below its start-up")
	inf, _ := exercise.Lookup("infeasible")
	assert.Equal(t, 2*time.Minute, inf.Estimate(exercise.Options{Epochs: 40}), "infeasible trains nothing")
	assert.Equal(t, 6*time.Minute+30*time.Second, inf.Estimate(exercise.Options{Observe: 5 * time.Minute}), "a longer watch takes longer")
}

func TestCheckLeaseRefusesWhatCannotFinish(t *testing.T) {
	end := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	fault := []string{"fault"}
	require.NoError(t, exercise.CheckLease("exercise fault", fault, exercise.Options{}, nil), "no lease known")
	require.NoError(t, exercise.CheckLease("exercise fault", fault, exercise.Options{}, plan.LeaseAt(end, end.Add(-20*time.Minute))), "20m left, 20m needed")

	err := exercise.CheckLease("exercise fault", fault, exercise.Options{}, plan.LeaseAt(end, end.Add(-19*time.Minute)))
	var le *exercise.LeaseError
	require.True(t, errors.As(err, &le))
	assert.EqualError(t, err, "exercise fault not started: it may take up to 20m and the node's lease ends in 19m (17:00 UTC), so it could not finish before the node is wiped")
	assert.True(t, le.QuickFits(), "6m with --quick fits")

	err = exercise.CheckLease("exercise fault", fault, exercise.Options{Quick: true}, plan.LeaseAt(end, end.Add(-5*time.Minute)))
	require.True(t, errors.As(err, &le))
	assert.False(t, le.QuickFits(), "a quick run asked: nothing shorter to offer")

	err = exercise.CheckLease("every exercise", exercise.Names(), exercise.Options{Quick: true}, plan.LeaseAt(end, end.Add(time.Minute)))
	assert.EqualError(t, err, "every exercise not started: the node's lease ended 1m ago (17:00 UTC), and the node may be wiped at any moment")
}

func TestGuideEndsWithTheBackup(t *testing.T) {
	for _, c := range []nextstep.Commands{{}, {Lab: state.Lab{Project: "lab2", StateDir: "/srv/my labs/2"}}} {
		g := exercise.Guide(c, "")
		steps := strings.Split(strings.TrimSpace(g), "\n\n")
		last := steps[len(steps)-1]
		assert.True(t, strings.HasPrefix(last, "Last, back up before the node's lease ends"), last)
		assert.Contains(t, last, "`"+c.Line("backup")+" ~/lab-backup.tar.gz`", "the backup acts on the user's lab, ~ left unquoted")
		assert.Contains(t, last, "`"+c.Line("restore", "FILE")+"`")
		assert.Contains(t, last, "`"+c.Line("lease")+"`")
		assert.Less(t, strings.Index(g, c.Line("verify")), strings.Index(g, c.Line("backup")), "after verify")
	}
}
