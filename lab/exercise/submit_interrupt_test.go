package exercise_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/exercise"
)

// An interrupt that lands while Ray takes the submission (the job is in Ray,
// its answer never reached mltrain) still ends that job: the interrupted
// run looks the job up by the id it sent and ends it, and says so.
func TestAJobSubmittedAsTheInterruptLandsIsEnded(t *testing.T) {
	f := newFixture(t, nil)
	f.ray.Run = lifecycle(workerEvent(0, "172.18.0.3", f.clock.Now()), "epoch 1\n"+resultOK, ray.Succeeded)
	f.opts.Timeout = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	model, err := url.Parse(f.ray.URL)
	require.NoError(t, err)
	fwd := httputil.NewSingleHostReverseProxy(model)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/api/jobs/" {
			fwd.ServeHTTP(httptest.NewRecorder(), req.WithContext(context.Background())) // Ray takes it...
			cancel()                                                                     // ...and the interrupt lands before its answer
			<-req.Context().Done()
			return
		}
		fwd.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	f.env.Ray, err = ray.New(ray.Options{Address: proxy.URL})
	require.NoError(t, err)

	rec, err := exercise.Run(ctx, f.env, "submit", f.opts)
	require.Error(t, err)
	require.Len(t, rec.Jobs, 1, "the job whose answer was lost is in the record")
	id := rec.Jobs[0].SubmissionID
	assert.Regexp(t, `^job `+regexp.QuoteMeta(id)+` was (PENDING|RUNNING) in Ray: ended it by `, clierr.Hint(err))
	j, ok := f.ray.Job(id)
	require.True(t, ok, "Ray took the job")
	assert.True(t, j.Status.Terminal(), "the job is not left open in Ray: %s", j.Status)
}
