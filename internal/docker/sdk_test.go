package docker_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// TestSDKRoundTrip drives the real engine through the Engine interface: build,
// volume, network, container life, exec, logs, copy, and the not-found paths.
func TestSDKRoundTrip(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	info, err := eng.Info(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, info.ServerVersion)
	assert.Contains(t, info.Runtimes, "runc")

	img := dockertest.GoImage(t, eng, "mltrain-test/sleeper:dev", "./dockertest/testdata/sleeper", map[string]string{"/etc/hello": "hi"})
	got, err := eng.ImageInspect(ctx, img)
	require.NoError(t, err)
	assert.Equal(t, "1", got.Labels[dockertest.TestLabel])

	_, err = eng.ImageInspect(ctx, "mltrain-test/absent:nope")
	assert.True(t, docker.IsNotFound(err), "absent image: %v", err)

	name := dockertest.UniqueName(t, "mlt")
	labels := map[string]string{dockertest.TestLabel: name}
	created, err := eng.VolumeEnsure(ctx, name, labels)
	require.NoError(t, err)
	assert.True(t, created)
	created, err = eng.VolumeEnsure(ctx, name, labels)
	require.NoError(t, err)
	assert.False(t, created, "second ensure finds the volume")
	t.Cleanup(func() { _ = eng.VolumeRemove(context.Background(), name) })
	_, err = eng.NetworkEnsure(ctx, name, labels)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.NetworkRemove(context.Background(), name) })

	id, err := eng.ContainerCreate(ctx, docker.ContainerSpec{
		Name:       name,
		Config:     &container.Config{Image: img, Labels: labels, Env: []string{"GREETING=hello"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(name)},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.ContainerRemove(context.Background(), id, true) })
	require.NoError(t, eng.ContainerStart(ctx, id))

	list, err := eng.ContainerList(ctx, labels)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, name, list[0].Name)

	d, err := eng.ContainerInspect(ctx, name)
	require.NoError(t, err)
	assert.True(t, d.Running)
	assert.NotEmpty(t, d.Networks[name], "container has an address on its network")

	res, err := eng.Exec(ctx, id, []string{"/app", "env", "GREETING"})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "hello", strings.TrimSpace(res.Stdout))

	require.NoError(t, eng.CopyToContainer(ctx, id, "/", dockertest.TarOf(map[string][]byte{"copied.txt": []byte("data")})))
	rc, err := eng.CopyFromContainer(ctx, id, "/copied.txt")
	require.NoError(t, err)
	var tarBuf bytes.Buffer
	_, _ = tarBuf.ReadFrom(rc)
	rc.Close()
	assert.Contains(t, tarBuf.String(), "data")

	require.NoError(t, eng.ContainerStop(ctx, id, 10*time.Second))
	var out bytes.Buffer
	require.NoError(t, eng.ContainerLogs(ctx, id, docker.LogsOptions{Tail: "10"}, &out, &out))
	assert.Contains(t, out.String(), "sleeper got SIGTERM", "stop sent SIGTERM first")

	require.NoError(t, eng.ContainerRemove(ctx, id, true))
	require.NoError(t, eng.ContainerRemove(ctx, id, true), "removing twice is not an error")
	_, err = eng.ContainerInspect(ctx, id)
	assert.True(t, docker.IsNotFound(err))
}
