package ready

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
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

func TestRayClusterCheck(t *testing.T) {
	var nodes []ray.Node
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(401)
			return
		}
		switch r.URL.Path {
		case "/api/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"version": "4", "ray_version": "2.54.0"})
		case "/api/v0/nodes":
			_ = json.NewEncoder(w).Encode(map[string]any{"result": true, "data": map[string]any{"result": map[string]any{"total": len(nodes), "result": nodes}}})
		}
	}))
	defer srv.Close()
	c, err := ray.New(ray.Options{Address: srv.URL, Token: "tok"})
	require.NoError(t, err)
	check := RayCluster(c, 2, 2, "")

	head := ray.Node{NodeID: "h", IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 2}}
	w1 := ray.Node{NodeID: "w1", State: "ALIVE", ResourcesTotal: map[string]float64{"GPU": 1}}
	w2 := ray.Node{NodeID: "w2", State: "DEAD", ResourcesTotal: map[string]float64{"GPU": 1}}
	nodes = []ray.Node{head, w1, w2}
	_, err = check.Run(context.Background())
	assert.ErrorContains(t, err, "1 of 2 workers, 1 of 2 GPUs")

	w2.State = "ALIVE"
	nodes = []ray.Node{head, w1, w2}
	detail, err := check.Run(context.Background())
	require.NoError(t, err)
	assert.Contains(t, detail, "1 head + 2 workers ALIVE, 2 GPUs")

	bad, _ := ray.New(ray.Options{Address: srv.URL})
	_, err = RayCluster(bad, 2, 2, "").Run(context.Background())
	assert.Error(t, err, "no token: 401")
}
