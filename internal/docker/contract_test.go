package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/docker/fake"
)

// TestEngineContract runs one table of behaviours (contract_cases_test.go)
// against the fake and against the real engine, so the fake the unit tests
// trust cannot drift from what Docker does. The real engine's run skips only
// where dockertest.Engine does: never under CI.
func TestEngineContract(t *testing.T) {
	subjects := []struct {
		name string
		make func(t *testing.T) *subject
	}{
		{"fake", fakeSubject},
		{"engine", realSubject},
	}
	for _, sub := range subjects {
		t.Run(sub.name, func(t *testing.T) {
			s := sub.make(t)
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					c.run(t, &subject{eng: s.eng, image: s.image, imageLabels: s.imageLabels, kind: s.kind, ctx: ctx})
				})
			}
		})
	}
}

// subject is one engine under the contract, with an image it holds.
type subject struct {
	eng         docker.Engine
	kind        string
	image       string            // runs the sleeper program (dockertest/testdata/sleeper)
	imageLabels map[string]string // the image's own labels
	ctx         context.Context
}

// contractLabel marks what one case made; its value is the case's name.
const contractLabel = "mltrain.contract"

func fakeSubject(t *testing.T) *subject {
	f := fake.New()
	img := "mltrain-test/sleeper:dev"
	lbl := map[string]string{dockertest.TestLabel: "1"}
	f.Images[img] = docker.Image{ID: "sha256:sleeper", Tags: []string{img}, Labels: lbl}
	f.ExecFunc = sleeperExec(f)
	f.StartFunc = func(name string) error { // the sleeper's first line, as a started one prints it
		f.Logs[name] = "sleeper up\n"
		return nil
	}
	return &subject{eng: f, kind: "fake", image: img, imageLabels: lbl}
}

func realSubject(t *testing.T) *subject {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	return &subject{eng: eng, kind: "engine", image: img, imageLabels: map[string]string{dockertest.TestLabel: "1"}}
}

// sleeperExec answers exec the way the sleeper program does in a real
// container: the fake runs no programs, so this hook stands in for the image.
func sleeperExec(f *fake.Engine) func(string, []string) (docker.ExecResult, error) {
	return func(name string, cmd []string) (docker.ExecResult, error) {
		if len(cmd) < 2 || cmd[0] != "/app" {
			return docker.ExecResult{ExitCode: 126, Stderr: "no such file"}, nil
		}
		switch cmd[1] {
		case "health":
			return docker.ExecResult{}, nil
		case "fail":
			return docker.ExecResult{ExitCode: 1}, nil
		case "echo":
			return docker.ExecResult{Stdout: fmt.Sprintln(cmd[2:])}, nil
		case "env":
			d, err := f.ContainerInspect(context.Background(), name)
			if err != nil {
				return docker.ExecResult{}, err
			}
			for _, e := range d.Env {
				if k, v, _ := strings.Cut(e, "="); k == cmd[2] {
					return docker.ExecResult{Stdout: v + "\n"}, nil
				}
			}
			return docker.ExecResult{Stdout: "\n"}, nil
		}
		return docker.ExecResult{ExitCode: 126, Stderr: "no such file"}, nil
	}
}

var nameSeq atomic.Int64

// name is a fresh object name: the pid keeps parallel runs of the suite apart.
func (s *subject) name() string {
	return fmt.Sprintf("mltc-%s-%d-%d", s.kind, os.Getpid(), nameSeq.Add(1))
}

// labels marks an object as this case's.
func (s *subject) labels(t *testing.T, extra ...string) map[string]string {
	l := map[string]string{contractLabel: s.caseName(t)}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func (s *subject) caseName(t *testing.T) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "."), os.Getpid())
}

// network ensures a network that is removed when the test ends, after the
// containers the test made on it (cleanups run last first).
func (s *subject) network(t *testing.T, labels map[string]string) string {
	t.Helper()
	n := s.name()
	created, err := s.eng.NetworkEnsure(s.ctx, n, labels)
	require.NoError(t, err)
	require.True(t, created)
	t.Cleanup(func() { _ = s.eng.NetworkRemove(context.Background(), n) })
	return n
}

// volumeCleanup removes volume name when the test ends.
func (s *subject) volumeCleanup(t *testing.T, name string) {
	t.Cleanup(func() { _ = s.eng.VolumeRemove(context.Background(), name) })
}

// spec is a sleeper container named name on network net (none when empty)
// with GREETING=hello in its environment.
func (s *subject) spec(name, net string, labels map[string]string) docker.ContainerSpec {
	sp := docker.ContainerSpec{
		Name:       name,
		Config:     &container.Config{Image: s.image, Labels: labels, Env: []string{"GREETING=hello"}},
		HostConfig: &container.HostConfig{},
	}
	if net != "" {
		sp.HostConfig.NetworkMode = container.NetworkMode(net)
	}
	return sp
}

// withVolume mounts the named volume at /data.
func withVolume(sp docker.ContainerSpec, vol string) docker.ContainerSpec {
	sp.HostConfig.Mounts = append(sp.HostConfig.Mounts, mount.Mount{Type: mount.TypeVolume, Source: vol, Target: "/data"})
	return sp
}

// create creates sp and force-removes it when the test ends.
func (s *subject) create(t *testing.T, sp docker.ContainerSpec) string {
	t.Helper()
	id, err := s.eng.ContainerCreate(s.ctx, sp)
	require.NoError(t, err, "create %s", sp.Name)
	t.Cleanup(func() { _ = s.eng.ContainerRemove(context.Background(), id, true) })
	return id
}

// running creates and starts a sleeper on net and waits until it says it
// is up, so that a stop finds it ready for SIGTERM.
func (s *subject) running(t *testing.T, net string, labels map[string]string) (name, id string) {
	t.Helper()
	name = s.name()
	id = s.create(t, s.spec(name, net, labels))
	require.NoError(t, s.eng.ContainerStart(s.ctx, id))
	require.Eventually(t, func() bool {
		var out bytes.Buffer
		return s.eng.ContainerLogs(s.ctx, id, docker.LogsOptions{}, &out, &out) == nil && strings.Contains(out.String(), "sleeper up")
	}, 30*time.Second, 50*time.Millisecond, "the sleeper %s says it is up", name)
	return name, id
}

func (s *subject) inspect(t *testing.T, nameOrID string) docker.ContainerDetails {
	t.Helper()
	d, err := s.eng.ContainerInspect(s.ctx, nameOrID)
	require.NoError(t, err)
	return d
}

// requireNotFound checks err is the engine's not-found, recognised by
// docker.IsNotFound, and names the object.
func requireNotFound(t *testing.T, err error, object string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, docker.IsNotFound(err), "not a not-found error: %v", err)
	require.ErrorIs(t, err, docker.ErrNotFound)
	require.False(t, docker.IsConflict(err), "a not-found error is no conflict: %v", err)
	require.Contains(t, err.Error(), object)
}

// requireConflict checks err is the engine's conflict and names the object.
func requireConflict(t *testing.T, err error, object string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, docker.IsConflict(err), "not a conflict error: %v", err)
	require.ErrorIs(t, err, docker.ErrConflict)
	require.False(t, docker.IsNotFound(err), "a conflict is no not-found error: %v", err)
	require.Contains(t, err.Error(), object)
}
