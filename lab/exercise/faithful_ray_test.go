package exercise_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
)

// Against a Ray that behaves as Ray does (a stop of a job whose supervisor
// was never placed does nothing; the job would stay PENDING for the 900 s
// start timeout), the exercise ends its job for real, well within its
// observation time plus a minute, and leaves nothing PENDING.
func TestInfeasibleEndsItsJobOnAFaithfulRay(t *testing.T) {
	m := raytest.NewModel(t, raymodel.Config{JobMonitorPeriod: 50 * time.Millisecond}, "", raytest.LabNodes()...)
	f := newFixture(t, nil)
	rc, err := ray.New(ray.Options{Address: m.URL})
	require.NoError(t, err)
	f.env.Ray = rc
	f.opts.Observe = 300 * time.Millisecond
	f.opts.Poll = 20 * time.Millisecond

	start := time.Now()
	rec, err := exercise.Run(context.Background(), f.env, "infeasible", f.opts)
	took := time.Since(start)
	require.NoError(t, err, "problems: %v", rec.Problems)
	assert.Less(t, took, f.opts.Observe+time.Minute)
	obs := rec.Infeasible
	require.NotNil(t, obs)
	assert.True(t, obs.StayedPending)
	require.NotNil(t, obs.Demand, "the model's cluster status lists the 2-GPU demand")
	assert.True(t, obs.StoppedAfter)
	assert.Contains(t, obs.EndedBy, "killing its supervisor actor")

	job, ok := m.Job(rec.Jobs[0].SubmissionID)
	require.True(t, ok)
	assert.Equal(t, ray.Failed, job.Status, "ended, not left PENDING")
	assert.Equal(t, "JOB_SUPERVISOR_ACTOR_DIED", job.ErrorType)
	for _, j := range m.Jobs() {
		assert.NotEqual(t, ray.Pending, j.Status, "no job left PENDING: %s", j.ID)
	}
	assert.Contains(t, rec.Observed, "ended it by killing its supervisor actor")
}

// What today's code did, against the same Ray: a stop, then a wait for a
// terminal state that never comes. The model keeps the job PENDING.
func TestAStopOfAnUnplacedJobDoesNothingOnAFaithfulRay(t *testing.T) {
	m := raytest.NewModel(t, raymodel.Config{}, "", raytest.LabNodes()...)
	rc, err := ray.New(ray.Options{Address: m.URL})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = rc.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py", SubmissionID: "big", EntrypointNumGPUs: 2})
	require.NoError(t, err)
	stopped, err := rc.Stop(ctx, "big")
	require.NoError(t, err)
	assert.True(t, stopped, "Ray answers stopped: true")
	j, err := rc.Job(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, ray.Pending, j.Status, "and the job stays PENDING")
}

// Ray deletes a working_dir package no job references once the pin of its
// last GET expired. Fractional runs a job alone, then three more: with the
// pin expiring between them, the later jobs find their package only
// because the runner pins (or uploads) it again before every submission.
func TestFractionalSurvivesAnExpiredPackagePin(t *testing.T) {
	// The pin lasts 200 ms; each job takes longer, so the package is gone
	// by the time the alone job has ended.
	m := raytest.NewModel(t, raymodel.Config{PackagePin: 200 * time.Millisecond}, "", raytest.LabNodes()...)
	m.Run = raymodel.TrainPy{Epoch: 300 * time.Millisecond, Register: 10 * time.Millisecond}.Program
	f := newFixture(t, nil)
	rc, err := ray.New(ray.Options{Address: m.URL})
	require.NoError(t, err)
	f.env.Ray = rc
	f.opts.Poll = 20 * time.Millisecond
	f.opts.Timeout = time.Minute
	rec, err := exercise.Run(context.Background(), f.env, "fractional", f.opts)
	for _, j := range m.Jobs() {
		assert.NotEqual(t, "RUNTIME_ENV_SETUP_FAILURE", j.ErrorType, "job %s lost its package: %s", j.ID, j.Message)
	}
	require.NoError(t, err, "problems: %v", rec.Problems)
	require.GreaterOrEqual(t, len(rec.Jobs), 4)
}

// The open-source dashboard's routes (App.tsx): overview, cluster, jobs,
// actors, metrics, serve, logs. No exercise sends a student elsewhere.
func TestNoExerciseLinksADashboardPageRayDoesNotHave(t *testing.T) {
	routes := []string{"overview", "cluster", "jobs", "actors", "metrics", "serve", "logs"}
	for _, ex := range exercise.Exercises() {
		text := strings.Join(append(append([]string{ex.Expected, ex.Lesson}, ex.Look...), ex.ByHand), " ")
		assert.NotContains(t, strings.ToLower(text), "train tab", ex.Name)
		for _, m := range regexp.MustCompile(`/#/([a-z]+)`).FindAllStringSubmatch(text, -1) {
			assert.Contains(t, routes, m[1], "%s links /#/%s", ex.Name, m[1])
		}
	}
	src, err := os.ReadFile("multi.go")
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`"/#/([a-z]+)"`).FindAllStringSubmatch(string(src), -1) {
		assert.Contains(t, routes, m[1], "lab multi links /#/%s", m[1])
	}
}
