package docker_test

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// contract is what mltrain relies on the engine to do, stated once and run
// against the fake and the real engine by TestEngineContract. A case that
// fails only for the fake means the fake drifted: fix the fake.
var contract = []struct {
	name string
	run  func(t *testing.T, s *subject)
}{
	{"create makes a stopped container found by name, ID and short ID", func(t *testing.T, s *subject) {
		net := s.network(t, s.labels(t))
		name := s.name()
		id := s.create(t, s.spec(name, net, s.labels(t)))
		require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), id)
		d := s.inspect(t, name)
		assert.Equal(t, id, d.ID)
		assert.Equal(t, name, d.Name, "no leading slash")
		assert.Equal(t, "created", d.State)
		assert.False(t, d.Running)
		assert.Equal(t, s.image, d.Image)
		assert.Contains(t, d.Env, "GREETING=hello")
		assert.Equal(t, map[string]string{net: ""}, d.Networks, "on its network, without an address until it runs")
		assert.Equal(t, id, s.inspect(t, docker.ShortID(id)).ID)
	}},
	{"create refuses a name in use with a conflict", func(t *testing.T, s *subject) {
		name := s.name()
		s.create(t, s.spec(name, "", s.labels(t)))
		_, err := s.eng.ContainerCreate(s.ctx, s.spec(name, "", s.labels(t)))
		requireConflict(t, err, name)
	}},
	{"create from an absent image is not found", func(t *testing.T, s *subject) {
		sp := s.spec(s.name(), "", s.labels(t))
		sp.Config.Image = "mltrain-test/absent:nope"
		_, err := s.eng.ContainerCreate(s.ctx, sp)
		requireNotFound(t, err, "mltrain-test/absent:nope")
		_, err = s.eng.ContainerInspect(s.ctx, sp.Name)
		requireNotFound(t, err, sp.Name)
	}},
	{"a container carries its own labels over its image's; list filters by key=value and by key", func(t *testing.T, s *subject) {
		head, worker := s.name(), s.name()
		s.create(t, s.spec(head, "", s.labels(t, "role", "head")))
		s.create(t, s.spec(worker, "", s.labels(t, "role", "worker")))
		want := maps.Clone(s.imageLabels)
		maps.Copy(want, s.labels(t, "role", "head"))
		d := s.inspect(t, head)
		assert.Equal(t, want, d.Labels)
		assert.Equal(t, want, d.Config.Labels)

		names := func(labels map[string]string) []string {
			l, err := s.eng.ContainerList(s.ctx, labels)
			require.NoError(t, err)
			var out []string
			for _, c := range l {
				out = append(out, c.Name)
			}
			return out
		}
		assert.Equal(t, []string{head, worker}, names(s.labels(t)), "sorted by name")
		assert.Equal(t, []string{head}, names(s.labels(t, "role", "head")))
		assert.Equal(t, []string{head, worker}, names(s.labels(t, "role", "")), "an empty value asks for the key only")
		assert.Empty(t, names(s.labels(t, "role", "gpu")))
		l, err := s.eng.ContainerList(s.ctx, s.labels(t, "role", "head"))
		require.NoError(t, err)
		require.Len(t, l, 1)
		assert.Equal(t, want, l[0].Labels)
		assert.Equal(t, "created", l[0].State)
	}},
	{"start runs the container with an address; starting it again changes nothing", func(t *testing.T, s *subject) {
		net := s.network(t, s.labels(t))
		name, id := s.running(t, net, s.labels(t))
		d := s.inspect(t, name)
		assert.True(t, d.Running)
		assert.Equal(t, "running", d.State)
		assert.False(t, d.StartedAt.IsZero())
		assert.NotEmpty(t, d.Networks[net])
		require.NoError(t, s.eng.ContainerStart(s.ctx, id))
		again := s.inspect(t, id)
		assert.Equal(t, d.StartedAt, again.StartedAt, "not restarted")
		assert.Equal(t, d.Networks, again.Networks)
	}},
	{"stop ends a running container and takes its address; stopping again is no error", func(t *testing.T, s *subject) {
		net := s.network(t, s.labels(t))
		name, id := s.running(t, net, s.labels(t))
		require.NoError(t, s.eng.ContainerStop(s.ctx, id, 10*time.Second))
		d := s.inspect(t, name)
		assert.False(t, d.Running)
		assert.Equal(t, "exited", d.State)
		assert.Equal(t, 0, d.ExitCode, "the sleeper exits 0 on SIGTERM")
		assert.False(t, d.FinishedAt.Before(d.StartedAt))
		assert.Equal(t, map[string]string{net: ""}, d.Networks, "still on its network, without an address")
		require.NoError(t, s.eng.ContainerStop(s.ctx, name, 10*time.Second))
		l, err := s.eng.NetworkList(s.ctx, net, nil)
		require.NoError(t, err)
		require.Len(t, l, 1)
		assert.Empty(t, l[0].Containers, "a stopped container has left the network")
	}},
	{"stop leaves a never-started container created", func(t *testing.T, s *subject) {
		name := s.name()
		s.create(t, s.spec(name, "", s.labels(t)))
		require.NoError(t, s.eng.ContainerStop(s.ctx, name, 10*time.Second))
		assert.Equal(t, "created", s.inspect(t, name).State)
	}},
	{"remove refuses a running container unless forced; removing twice is no error", func(t *testing.T, s *subject) {
		name, id := s.running(t, "", s.labels(t))
		requireConflict(t, s.eng.ContainerRemove(s.ctx, name, false), id)
		assert.True(t, s.inspect(t, name).Running, "still there")
		require.NoError(t, s.eng.ContainerRemove(s.ctx, name, true))
		require.NoError(t, s.eng.ContainerRemove(s.ctx, name, true))
		_, err := s.eng.ContainerInspect(s.ctx, id)
		requireNotFound(t, err, id)
	}},
	{"remove takes a stopped container without force", func(t *testing.T, s *subject) {
		name, id := s.running(t, "", s.labels(t))
		require.NoError(t, s.eng.ContainerStop(s.ctx, id, 10*time.Second))
		require.NoError(t, s.eng.ContainerRemove(s.ctx, name, false))
		_, err := s.eng.ContainerInspect(s.ctx, name)
		requireNotFound(t, err, name)
	}},
	{"exec runs in a running container and reports the exit code", func(t *testing.T, s *subject) {
		name, id := s.running(t, "", s.labels(t))
		res, err := s.eng.Exec(s.ctx, id, []string{"/app", "env", "GREETING"})
		require.NoError(t, err)
		assert.Equal(t, docker.ExecResult{Stdout: "hello\n"}, res)
		res, err = s.eng.Exec(s.ctx, name, []string{"/app", "fail"})
		require.NoError(t, err, "a failing command is an exit code, not an error")
		assert.Equal(t, 1, res.ExitCode)
	}},
	{"exec in a container that is not running is a conflict", func(t *testing.T, s *subject) {
		name := s.name()
		id := s.create(t, s.spec(name, "", s.labels(t)))
		_, err := s.eng.Exec(s.ctx, name, []string{"/app", "health"})
		requireConflict(t, err, id)
	}},
	{"a missing container is not found, except to stop and remove", func(t *testing.T, s *subject) {
		name := s.name()
		_, err := s.eng.ContainerInspect(s.ctx, name)
		requireNotFound(t, err, name)
		requireNotFound(t, s.eng.ContainerStart(s.ctx, name), name)
		_, err = s.eng.Exec(s.ctx, name, []string{"/app", "health"})
		requireNotFound(t, err, name)
		var out bytes.Buffer
		requireNotFound(t, s.eng.ContainerLogs(s.ctx, name, docker.LogsOptions{}, &out, &out), name)
		requireNotFound(t, s.eng.CopyToContainer(s.ctx, name, "/", dockertest.TarOf(map[string][]byte{"f": []byte("x")})), name)
		_, err = s.eng.CopyFromContainer(s.ctx, name, "/f")
		requireNotFound(t, err, name)
		require.NoError(t, s.eng.ContainerStop(s.ctx, name, time.Second))
		require.NoError(t, s.eng.ContainerRemove(s.ctx, name, true))
		_, err = s.eng.ImageInspect(s.ctx, "mltrain-test/absent:nope")
		requireNotFound(t, err, "mltrain-test/absent:nope")
	}},
	{"networks: ensured once, listed by exact name and labels with their running containers", func(t *testing.T, s *subject) {
		net := s.network(t, s.labels(t))
		created, err := s.eng.NetworkEnsure(s.ctx, net, s.labels(t))
		require.NoError(t, err)
		assert.False(t, created, "the second ensure finds it")
		longer := net + "-x" // the engine's name filter matches substrings
		_, err = s.eng.NetworkEnsure(s.ctx, longer, s.labels(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.eng.NetworkRemove(context.Background(), longer) })

		l, err := s.eng.NetworkList(s.ctx, net, nil)
		require.NoError(t, err)
		require.Len(t, l, 1)
		assert.Equal(t, net, l[0].Name)
		assert.Equal(t, s.labels(t), l[0].Labels)
		assert.NotEmpty(t, l[0].ID)
		l, err = s.eng.NetworkList(s.ctx, "", s.labels(t))
		require.NoError(t, err)
		assert.Len(t, l, 2)
		l, err = s.eng.NetworkList(s.ctx, "", map[string]string{contractLabel: "nobody"})
		require.NoError(t, err)
		assert.Empty(t, l)

		s.create(t, s.spec(s.name(), net, s.labels(t))) // created, never started: not on the list
		name, _ := s.running(t, net, s.labels(t))
		l, err = s.eng.NetworkList(s.ctx, net, nil)
		require.NoError(t, err)
		require.Len(t, l, 1)
		assert.Equal(t, []string{name}, l[0].Containers)
	}},
	{"networks: one in use is not removed; a free one is, by ID; twice is no error", func(t *testing.T, s *subject) {
		net := s.network(t, s.labels(t))
		name, _ := s.running(t, net, s.labels(t))
		err := s.eng.NetworkRemove(s.ctx, net)
		require.Error(t, err)
		assert.Contains(t, err.Error(), net)
		assert.False(t, docker.IsNotFound(err), "refused as in use (its class differs between engine versions): %v", err)
		l, err := s.eng.NetworkList(s.ctx, net, nil)
		require.NoError(t, err)
		require.Len(t, l, 1, "still there")
		require.NoError(t, s.eng.ContainerRemove(s.ctx, name, true))
		require.NoError(t, s.eng.NetworkRemove(s.ctx, l[0].ID))
		require.NoError(t, s.eng.NetworkRemove(s.ctx, l[0].ID))
		l, err = s.eng.NetworkList(s.ctx, net, nil)
		require.NoError(t, err)
		assert.Empty(t, l)
	}},
	{"volumes: ensured once, inspected, listed by labels; a missing one is not found", func(t *testing.T, s *subject) {
		vol := s.name()
		s.volumeCleanup(t, vol)
		created, err := s.eng.VolumeEnsure(s.ctx, vol, s.labels(t))
		require.NoError(t, err)
		assert.True(t, created)
		created, err = s.eng.VolumeEnsure(s.ctx, vol, s.labels(t))
		require.NoError(t, err)
		assert.False(t, created, "the second ensure finds it")
		v, err := s.eng.VolumeInspect(s.ctx, vol)
		require.NoError(t, err)
		assert.Equal(t, vol, v.Name)
		assert.Equal(t, s.labels(t), v.Labels)
		assert.Equal(t, "local", v.Driver)
		assert.Empty(t, v.Options)
		assert.Contains(t, v.Mountpoint, vol)
		_, err = time.Parse(time.RFC3339, v.CreatedAt)
		assert.NoError(t, err, "created at %q", v.CreatedAt)
		l, err := s.eng.VolumeList(s.ctx, s.labels(t))
		require.NoError(t, err)
		require.Len(t, l, 1)
		assert.Equal(t, v, l[0])
		l, err = s.eng.VolumeList(s.ctx, map[string]string{contractLabel: "nobody"})
		require.NoError(t, err)
		assert.Empty(t, l)
		_, err = s.eng.VolumeInspect(s.ctx, vol+"-absent")
		requireNotFound(t, err, vol+"-absent")
	}},
	{"volumes: a container's mount creates its volume; a volume any container has is not removed", func(t *testing.T, s *subject) {
		vol, name := s.name(), s.name()
		s.volumeCleanup(t, vol)
		id := s.create(t, withVolume(s.spec(name, "", s.labels(t)), vol))
		v, err := s.eng.VolumeInspect(s.ctx, vol)
		require.NoError(t, err, "created with the container")
		assert.Empty(t, v.Labels)
		assert.Equal(t, "local", v.Driver)
		requireConflict(t, s.eng.VolumeRemove(s.ctx, vol), vol)
		require.NoError(t, s.eng.ContainerRemove(s.ctx, id, false))
		require.NoError(t, s.eng.VolumeRemove(s.ctx, vol))
		require.NoError(t, s.eng.VolumeRemove(s.ctx, vol))
		_, err = s.eng.VolumeInspect(s.ctx, vol)
		requireNotFound(t, err, vol)
	}},
}
