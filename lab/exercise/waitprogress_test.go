package exercise_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
)

// A job that runs long is no silent wait: at least every 15 s of the
// exercise's clock it says which job it waits for, how long so far, of
// what limit, and the job's status.
func TestALongJobIsNoSilentWait(t *testing.T) {
	f := newFixture(t, nil)
	f.env.Now = f.clock.Now // the model's time: each request moves it a tick
	f.ray.Run = raytest.Script{Start: workerEvent(0, "172.18.0.3", time.Now()), End: "epoch 1\n" + resultOK,
		Run: 600 * tick}.Program // a minute of the model's time
	f.opts.Timeout = 20 * time.Minute
	rec, err := exercise.Run(context.Background(), f.env, "submit", f.opts)
	require.NoError(t, err)
	require.Len(t, rec.Jobs, 1)
	id := regexp.QuoteMeta(rec.Jobs[0].SubmissionID)
	lines := regexp.MustCompile(`waiting for job `+id+` to end: (\d+)s so far of at most 20m0s; it is RUNNING`).FindAllStringSubmatch(said(f), -1)
	require.GreaterOrEqual(t, len(lines), 3, "a minute's wait says so at least three times:\n%s", said(f))
	prev := 0
	for _, l := range lines {
		n, _ := strconv.Atoi(l[1])
		assert.InDelta(t, 15, n-prev, 1, "one line each 15 s, not more often: %v", lines)
		prev = n
	}
	assert.Equal(t, ray.Succeeded, rec.Jobs[0].Status)
}
