package exercise_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/lab/exercise"
)

// An interrupted exercise that cannot end its PENDING job (the dashboard
// fails the supervisor actor's kill) says so, and names what does end it:
// killing the supervisor actor, by its name, on the dashboard's Actors
// page; not 'ray job stop', which may leave a never-placed job PENDING.
func TestAPendingJobThatCannotBeEndedNamesItsSupervisorActor(t *testing.T) {
	f := newFixture(t, nil)
	// Workers without a GPU: the submit job's 1 GPU fits no node.
	f.useRay(raymodel.Config{},
		raymodel.NodeSpec{IP: "172.18.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}},
		raymodel.NodeSpec{IP: "172.18.0.3", Total: raymodel.Resources{"CPU": 32}})
	f.env.Now = f.clock.Now
	model, err := url.Parse(f.ray.URL)
	require.NoError(t, err)
	fwd := httputil.NewSingleHostReverseProxy(model)
	var kills atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/api/actors/kill" {
			kills.Add(1)
			http.Error(w, "the dashboard is restarting", http.StatusServiceUnavailable)
			return
		}
		fwd.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	f.env.Ray, err = ray.New(ray.Options{Address: proxy.URL})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the interrupt, once the exercise said the job is PENDING
		for ctx.Err() == nil {
			if strings.Contains(said(f), "PENDING for") {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	rec, err := exercise.Run(ctx, f.env, "submit", f.opts)
	require.Error(t, err)
	require.Len(t, rec.Jobs, 1)
	id := rec.Jobs[0].SubmissionID
	assert.Positive(t, kills.Load(), "the exercise tried to kill the supervisor")
	assert.Regexp(t, `^job `+regexp.QuoteMeta(id)+` is still PENDING in Ray: end it by killing its supervisor actor `+
		regexp.QuoteMeta(ray.SupervisorActorName(id))+` on the dashboard's Actors page \(`+regexp.QuoteMeta(proxy.URL)+`/#/actors\) \(.*kill actor .*\)$`,
		clierr.Hint(err))
	assert.NotContains(t, clierr.Hint(err), "ray job stop")
	j, jerr := f.env.Ray.Job(context.Background(), id)
	require.NoError(t, jerr)
	assert.Equal(t, ray.Pending, j.Status, "nothing ended it: the hint is honest")
}
