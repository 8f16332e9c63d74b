package exercise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/lab/exercise"
)

// A job Ray cannot place is not a silent wait: after a few seconds PENDING
// the exercise says why (Ray's pending demand beside its nodes), and again
// while it waits. Interrupted, the exercise ends the job in Ray and says
// so; a re-run starts over, it does not converge.
func TestAPendingJobSaysWhyAndAnInterruptEndsIt(t *testing.T) {
	f := newFixture(t, nil)
	// Workers without a GPU: the submit job's 1 GPU fits no node.
	f.useRay(raymodel.Config{},
		raymodel.NodeSpec{IP: "172.18.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}},
		raymodel.NodeSpec{IP: "172.18.0.3", Total: raymodel.Resources{"CPU": 32}})
	f.env.Now = f.clock.Now // the model's time: each request moves it a tick
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the interrupt, once the exercise has said why twice
		for ctx.Err() == nil {
			if strings.Count(said(f), "PENDING for") >= 2 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	rec, err := exercise.Run(ctx, f.env, "submit", f.opts)
	require.Error(t, err)
	out := said(f)
	assert.Regexp(t, `mltrain-submit-\S+ PENDING for 1\ds: Ray's pending demand .*'GPU': 1\.0.*; ALIVE nodes: 172\.18\.0\.3 32 CPU 0 GPU, head 4 CPU 0 GPU`, out)
	assert.True(t, errors.Is(err, clierr.ErrStartsOver), "a re-run starts over")
	require.Len(t, rec.Jobs, 1)
	assert.Regexp(t, `^job `+rec.Jobs[0].SubmissionID+` was PENDING in Ray: ended it by killing its supervisor actor \S+$`, clierr.Hint(err))
	j, jerr := f.env.Ray.Job(context.Background(), rec.Jobs[0].SubmissionID)
	require.NoError(t, jerr)
	assert.True(t, j.Status.Terminal(), "the job is not left PENDING in Ray: %s", j.Status)

	ie := clierr.Interrupted(err, 2, "mltrain lab submit")
	assert.Contains(t, clierr.Hint(ie), "run 'mltrain lab submit' again: it starts over")
	assert.NotContains(t, clierr.Hint(ie), "converges")
}

// said is everything the exercise told the user so far.
func said(f *fixture) string {
	var b strings.Builder
	for _, e := range f.rec.Events() {
		b.WriteString(e.Message + "\n")
	}
	return b.String()
}
