package exercise_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/exercise"
)

// startWorker runs a stand-in Ray worker: a process that waits for SIGTERM,
// labelled like the lab's workers, on the default bridge network.
func startWorker(t *testing.T, eng docker.Engine, img, project string, i int) docker.ContainerDetails {
	t.Helper()
	ctx := context.Background()
	name := dockertest.UniqueName(t, fmt.Sprintf("mlt-w%d", i))
	_, err := eng.ContainerCreate(ctx, docker.ContainerSpec{
		Name: name,
		Config: &container.Config{Image: img, Labels: map[string]string{
			dockertest.TestLabel: "1", labels.Role: labels.RoleWorker, labels.Project: project}},
		HostConfig: &container.HostConfig{},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.ContainerRemove(context.Background(), name, true) })
	require.NoError(t, eng.ContainerStart(ctx, name))
	d, err := eng.ContainerInspect(ctx, name)
	require.NoError(t, err)
	require.True(t, d.Running)
	require.NotEmpty(t, d.Networks, "a running container on the bridge has an address")
	return d
}

func firstIP(d docker.ContainerDetails) string {
	for _, ip := range d.Networks {
		if ip != "" {
			return ip
		}
	}
	return ""
}

// On the real engine: the fault exercise stops the stand-in whose address is
// the training node's, leaves the other alone, and starts it again.
func TestFaultOnRealEngine(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	// A project name of its own, so workers of a real lab on this host are
	// never candidates.
	project := dockertest.UniqueName(t, "proj")
	w0 := startWorker(t, eng, img, project, 0)
	w1 := startWorker(t, eng, img, project, 1)
	trainIP, otherIP := firstIP(w1), firstIP(w0)
	require.NotEmpty(t, trainIP)
	require.NotEqual(t, trainIP, otherIP)

	f := newFixture(t, eng)
	f.env.Project = project
	f.opts.Timeout = time.Minute
	f.opts.CheckpointTimeout = 30 * time.Second
	f.opts.Poll = 20 * time.Millisecond
	trainRun(f, eng, map[string]string{trainIP: w1.Name, otherIP: w0.Name}, trainIP, otherIP)

	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	obs := rec.Fault
	assert.Equal(t, w1.Name, obs.StoppedContainer)
	assert.Equal(t, w0.Name, obs.ResumedContainer)
	assert.True(t, obs.Restarted)

	ctx := context.Background()
	after1, err := eng.ContainerInspect(ctx, w1.Name)
	require.NoError(t, err)
	assert.True(t, after1.Running, "the stopped worker runs again")
	assert.True(t, after1.StartedAt.After(w1.StartedAt), "it was really stopped and started: %s vs %s", after1.StartedAt, w1.StartedAt)
	assert.True(t, after1.FinishedAt.After(w1.StartedAt), "it exited in between")
	after0, err := eng.ContainerInspect(ctx, w0.Name)
	require.NoError(t, err)
	assert.True(t, after0.Running)
	assert.Equal(t, w0.StartedAt, after0.StartedAt, "the other worker was never touched")
}
