package main

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// complete runs cobra's __complete as a shell's completion script does and
// returns the candidates (descriptions cut off) and the directive.
func complete(t *testing.T, eng docker.Engine, args ...string) ([]string, string) {
	t.Helper()
	var out bytes.Buffer
	a := newApp(&out, &bytes.Buffer{})
	a.connect = func(context.Context) (docker.Engine, error) {
		if eng == nil {
			return nil, errors.New("docker engine at unix:///var/run/docker.sock is not reachable")
		}
		return eng, nil
	}
	root := a.root()
	root.SetArgs(append([]string{"__complete"}, args...))
	require.NoError(t, root.ExecuteContext(context.Background()))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		c, _, _ := strings.Cut(l, "\t")
		cands = append(cands, c)
	}
	return cands, lines[len(lines)-1]
}

// labEngine is an engine running a lab of project with n workers.
func labEngine(project string, n int) *fake.Engine {
	f := fake.New()
	add := func(svc string, extra map[string]string) {
		l := map[string]string{labels.Project: project, labels.Service: svc}
		for k, v := range extra {
			l[k] = v
		}
		f.AddContainer(docker.ContainerDetails{Container: docker.Container{ID: project + "-" + svc, Name: project + "-" + svc, Labels: l, State: "running"}, Running: true})
	}
	for _, s := range []string{service.HeadService, service.MinIOService, service.JupyterService} {
		add(s, nil)
	}
	for i := range n {
		add(service.WorkerService(i), map[string]string{labels.WorkerIndex: strconv.Itoa(i)})
	}
	return f
}

func TestCompletion(t *testing.T) {
	noFiles := ":4" // ShellCompDirectiveNoFileComp

	got, dir := complete(t, nil, "verify", "--only", "")
	assert.Equal(t, []string{"host", "containers", "gpu", "ray", "minio", "data", "metrics", "jupyter", "exercises"}, got)
	assert.Equal(t, ":6", dir, "no file names, and no space: a comma may follow")
	got, _ = complete(t, nil, "verify", "--only", "ray,m")
	assert.Equal(t, []string{"ray,minio", "ray,metrics"}, got)
	got, _ = complete(t, nil, "verify", "--only", "ray,minio,")
	assert.NotContains(t, got, "ray,minio,ray", "a chosen group is not offered again")
	assert.Contains(t, got, "ray,minio,data")

	// From the lab's containers when the engine answers (4 workers, this project's only).
	eng := labEngine("ncaudit", 4)
	for _, c := range labEngine("other", 1).Containers {
		eng.AddContainer(*c)
	}
	got, dir = complete(t, eng, "logs", "--project", "ncaudit", "")
	assert.Equal(t, []string{"jupyter", "minio", "ray-head", "ray-worker-0", "ray-worker-1", "ray-worker-2", "ray-worker-3"}, got)
	assert.Equal(t, noFiles, dir)
	got, _ = complete(t, eng, "logs", "--project", "ncaudit", "ray-w")
	assert.Equal(t, []string{"ray-worker-0", "ray-worker-1", "ray-worker-2", "ray-worker-3"}, got)
	got, _ = complete(t, eng, "logs", "--project", "ncaudit", "minio", "")
	assert.Empty(t, got, "logs takes one service")

	got, _ = complete(t, eng, "worker", "")
	assert.Equal(t, []string{"stop", "start"}, got)
	got, _ = complete(t, eng, "worker", "--project", "ncaudit", "stop", "")
	assert.Equal(t, []string{"0", "1", "2", "3"}, got)

	// Engine unreachable: the plan of the last up, else the lab's usual services.
	dirPath := t.TempDir()
	got, _ = complete(t, nil, "logs", "--state-dir", dirPath, "")
	assert.Equal(t, []string{"grafana", "jupyter", "minio", "prometheus", "ray-head", "ray-worker-0", "ray-worker-1"}, got)
	sd := state.Dir(dirPath)
	require.NoError(t, sd.SaveState(state.State{Project: "mltrain", Plan: plan.Plan{Workers: make([]plan.Worker, 3)}}))
	got, _ = complete(t, nil, "worker", "--state-dir", dirPath, "start", "")
	assert.Equal(t, []string{"0", "1", "2"}, got)
}
