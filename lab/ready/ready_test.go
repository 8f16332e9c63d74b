package ready

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

func init() { Every = 20 * time.Millisecond }

func labEngine() *fake.Engine {
	f := fake.New()
	for _, n := range []string{"ray-head", "minio"} {
		f.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: n, State: "running",
			Labels: map[string]string{labels.Project: "lab", labels.Service: n}}, Running: true})
	}
	return f
}

func TestWaitPassesWhenEveryCheckPasses(t *testing.T) {
	var calls atomic.Int32
	slow := Check{Name: "slow", Run: func(context.Context) (string, error) {
		if calls.Add(1) < 3 {
			return "", errors.New("not yet")
		}
		return "ok", nil
	}}
	var rec progress.Recorder
	require.NoError(t, Wait(context.Background(), labEngine(), "lab", []Check{slow}, 5*time.Second, &rec))
	assert.True(t, rec.Has("ready slow", progress.Done))
	assert.EqualValues(t, 3, calls.Load())
}

func TestWaitFailsFastOnExitedContainer(t *testing.T) {
	f := labEngine()
	f.Logs["minio"] = "FATAL unable to use /data\n"
	never := Check{Name: "minio", Run: func(context.Context) (string, error) { return "", errors.New("connection refused") }}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = f.ContainerStop(context.Background(), "minio", 0)
		c, _ := f.ContainerInspect(context.Background(), "minio")
		c.ExitCode = 1
		f.AddContainer(c)
	}()
	start := time.Now()
	err := Wait(context.Background(), f, "lab", []Check{never}, time.Minute, nil)
	var cf *compose.ContainerFailure
	require.True(t, errors.As(err, &cf), "got %v", err)
	assert.Equal(t, "minio", cf.Container)
	assert.Contains(t, cf.Logs, "FATAL unable to use /data")
	assert.Less(t, time.Since(start), 30*time.Second) // sanity bound: not the 1-minute timeout
}

func TestWaitTimeoutNamesFailingChecks(t *testing.T) {
	bad := Check{Name: "grafana", Run: func(context.Context) (string, error) { return "", errors.New("HTTP 502") }}
	good := Check{Name: "jupyter", Run: func(context.Context) (string, error) { return "ok", nil }}
	err := Wait(context.Background(), labEngine(), "lab", []Check{bad, good}, 200*time.Millisecond, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "grafana: HTTP 502")
	assert.NotContains(t, err.Error(), "jupyter")
	assert.ErrorIs(t, err, ErrNotReady)
}

func TestHTTPCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	_, err := HTTP("ok", srv.URL+"/ok", nil).Run(context.Background())
	assert.NoError(t, err)
	_, err = HTTP("bad", srv.URL+"/bad", nil).Run(context.Background())
	assert.ErrorContains(t, err, "HTTP 503")
}

// Healthy waits out "starting" (what verify reads), names what it waits
// for, and counts a missing or stopped service as not ready.
func TestHealthyWaitsForTheEngineToSayHealthy(t *testing.T) {
	f := labEngine()
	hc := &container.Config{Healthcheck: &container.HealthConfig{Test: []string{"CMD", "true"}}}
	f.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: "jupyter", State: "running",
		Labels: map[string]string{labels.Project: "lab", labels.Service: "jupyter"}}, Running: true, Health: "starting", Config: hc})
	check := Healthy(f, "lab", []string{"ray-head", "minio", "jupyter"})
	_, err := check.Run(context.Background())
	assert.EqualError(t, err, "container health: jupyter starting")

	c := f.Containers["jupyter"]
	c.Health = "healthy"
	detail, err := check.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "3 containers running and healthy", detail)

	_, err = Healthy(f, "lab", []string{"ray-head", "grafana"}).Run(context.Background())
	assert.EqualError(t, err, "container health: grafana has no container")
	require.NoError(t, f.ContainerStop(context.Background(), "minio", 0))
	_, err = check.Run(context.Background())
	assert.EqualError(t, err, "container health: minio exited")
}
