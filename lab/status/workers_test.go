package status_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/status"
)

// twoLabs is an engine running lab "mltrain" (head + 2 workers) and another
// lab whose worker has an address clashing with mltrain's worker 1.
func twoLabs() *fake.Engine {
	eng := fake.New()
	add := func(name, project, role string, idx int, ip string) {
		l := map[string]string{labels.Role: role, labels.Project: project}
		if idx >= 0 {
			l[labels.WorkerIndex] = fmt.Sprint(idx)
		}
		eng.AddContainer(docker.ContainerDetails{
			Container: docker.Container{Name: name, State: "running", Labels: l},
			Running:   true, Networks: map[string]string{project: ip},
		})
	}
	add("ray-head", "mltrain", "head", -1, "172.18.0.2")
	add("ray-worker-0", "mltrain", labels.RoleWorker, 0, "172.18.0.3")
	add("ray-worker-1", "mltrain", labels.RoleWorker, 1, "172.18.0.4")
	add("other-ray-worker-0", "other", labels.RoleWorker, 0, "172.18.0.4")
	return eng
}

func TestFindWorkerByIPFiltersProject(t *testing.T) {
	ctx := context.Background()
	eng := twoLabs()
	w, err := status.FindWorker(ctx, eng, status.WorkerQuery{Project: "mltrain", IP: "172.18.0.4"})
	require.NoError(t, err)
	assert.Equal(t, "ray-worker-1", w.Name)
	assert.Equal(t, 1, w.Index)
	_, err = status.FindWorker(ctx, eng, status.WorkerQuery{IP: "172.18.0.4"})
	require.Error(t, err, "two labs' workers share the address: ambiguous without a project")
	assert.Contains(t, err.Error(), "several worker containers")
	_, err = status.FindWorker(ctx, eng, status.WorkerQuery{Project: "mltrain", IP: "172.18.0.2"})
	require.Error(t, err, "the head is not a worker")
	assert.Contains(t, err.Error(), "ray-worker-0 (172.18.0.3)", "the error lists the workers seen")
}

func TestFindWorkerByIndex(t *testing.T) {
	ctx := context.Background()
	eng := twoLabs()
	one := 1
	w, err := status.FindWorker(ctx, eng, status.WorkerQuery{Project: "other", Index: new(int)})
	require.NoError(t, err)
	assert.Equal(t, "other-ray-worker-0", w.Name)
	w, err = status.FindWorker(ctx, eng, status.WorkerQuery{Project: "mltrain", Index: &one})
	require.NoError(t, err)
	assert.Equal(t, []string{"172.18.0.4"}, w.IPs())
	seven := 7
	_, err = status.FindWorker(ctx, eng, status.WorkerQuery{Project: "mltrain", Index: &seven})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `lab "mltrain" has no worker 7 (workers: 0, 1)`)
	_, err = status.FindWorker(ctx, eng, status.WorkerQuery{Project: "nolab", Index: &one})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no worker container")
	_, err = status.FindWorker(ctx, nil, status.WorkerQuery{Project: "mltrain", Index: &one})
	assert.ErrorContains(t, err, "no Docker engine")
}
