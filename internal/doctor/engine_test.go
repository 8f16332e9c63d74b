package doctor

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
)

// shared keeps Run's deferred Close from closing the test's engine.
type shared struct{ docker.Engine }

func (shared) Close() error { return nil }

// Against this machine's engine: it is reachable (a pass row with its
// version) and has no NVIDIA runtime, so an NVIDIA host fails with the
// documented fix.
func TestRealEngineNVIDIAFixture(t *testing.T) {
	eng := dockertest.Engine(t)
	info, err := eng.Info(context.Background())
	require.NoError(t, err)
	require.NotContains(t, info.Runtimes, "nvidia", "this test assumes an engine without the NVIDIA runtime")

	d := System(func(context.Context) (docker.Engine, error) { return shared{eng}, nil },
		host.Options{Root: "../gpu/testdata/nvidia-driver", HostIP: "192.0.2.1"})
	d.PortFree = func(int) error { return nil }
	r := Run(context.Background(), d, Options{})

	c := row(t, r, "docker")
	assert.Equal(t, Pass, c.Status)
	assert.Contains(t, c.Detail, "Docker "+info.ServerVersion)
	assert.Contains(t, c.Detail, eng.Host())

	// The fixture has the nvidia driver bound but (being a fixture) no NVML.
	assert.Equal(t, Fail, row(t, r, "gpu "+gpu.CodeLibraryMissing).Status)
	c = row(t, r, "nvidia runtime")
	assert.Equal(t, Fail, c.Status)
	assert.Equal(t, FixNVIDIARuntime, c.Fix)
	assert.False(t, r.OK)

	c = row(t, r, "disk")
	assert.NotEqual(t, Fail, c.Status)
	assert.Contains(t, c.Detail, info.DockerRootDir)
}

// A real container publishing a port is named as its holder.
func TestRealEnginePortHeldByContainer(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	img := dockertest.GoImage(t, eng, "mltrain-test/sleeper:dev", "../docker/dockertest/testdata/sleeper", nil)

	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	name := dockertest.UniqueName(t, "mltrain-doctor")
	p := network.MustParsePort("8080/tcp")
	id, err := eng.ContainerCreate(ctx, docker.ContainerSpec{Name: name,
		Config:     &container.Config{Image: img, Labels: map[string]string{dockertest.TestLabel: "1"}, ExposedPorts: network.PortSet{p: {}}},
		HostConfig: &container.HostConfig{PortBindings: network.PortMap{p: {{HostPort: strconv.Itoa(port)}}}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.ContainerRemove(context.Background(), id, true) })
	require.NoError(t, eng.ContainerStart(ctx, id))

	d := System(func(context.Context) (docker.Engine, error) { return shared{eng}, nil },
		host.Options{Root: "../gpu/testdata/none", HostIP: "192.0.2.1"})
	r := Run(ctx, d, Options{Ports: []int{port}})
	c := row(t, r, "port "+strconv.Itoa(port))
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "in use by container "+name)
	assert.Contains(t, c.Fix, "docker stop "+name)

	// Once it is gone the port is free again.
	require.NoError(t, eng.ContainerRemove(ctx, id, true))
	r = Run(ctx, d, Options{Ports: []int{port}})
	assert.Equal(t, Pass, row(t, r, "port "+strconv.Itoa(port)).Status)
}
