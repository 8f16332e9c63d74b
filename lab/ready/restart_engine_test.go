package ready

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// On the real engine: a container Docker is restarting under its restart
// policy, seconds into its backoff (Docker doubles it from 100 ms while a
// container runs under 10 s), is waited for, with a line saying so, and the
// wait passes once Docker started it again: no fault while Docker heals.
func TestWaitWaitsForDockersRestartOnTheEngine(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	project := dockertest.UniqueName(t, "mltr")
	name := project + "-worker"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := eng.ContainerCreate(ctx, docker.ContainerSpec{Name: name,
		Config: &container.Config{Image: img, Labels: map[string]string{labels.Project: project, labels.Service: "worker"},
			StopSignal: "SIGTERM"},
		HostConfig: &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.ContainerRemove(context.Background(), name, true) })
	require.NoError(t, eng.ContainerStart(ctx, name))

	// A signal other than its stop signal (and SIGKILL) ends the sleeper
	// without Docker taking it for a stop by the user (moby's killWithSignal
	// marks only those), so the policy starts it again, each time later:
	// five exits in, the next restart waits 3.2 s.
	var d docker.ContainerDetails
	for i := 0; i < 6; i++ {
		require.Eventually(t, func() bool {
			d, err = eng.ContainerInspect(ctx, name)
			return err == nil && d.State == "running" // Running is true while restarting too: a kill then would not count
		}, time.Minute, 10*time.Millisecond, "Docker started %s again", name)
		out, err := exec.Command("docker", "kill", "--signal", "SIGINT", name).CombinedOutput()
		require.NoError(t, err, "docker kill: %s", out)
		require.Eventually(t, func() bool { // docker kill returns once the signal is sent, before the exit
			d, err = eng.ContainerInspect(ctx, name)
			return err == nil && d.State != "running"
		}, 10*time.Second, 5*time.Millisecond, "%s exited", name)
	}
	require.Eventually(t, func() bool { // from its exit to Docker's decision to restart it
		d, err = eng.ContainerInspect(ctx, name)
		return err == nil && d.State == "restarting"
	}, 2*time.Second, 5*time.Millisecond, "Docker waits out its backoff")

	rec := &progress.Recorder{}
	running := Check{Name: "running", Run: func(ctx context.Context) (string, error) {
		d, err := eng.ContainerInspect(ctx, name)
		if err != nil || d.State != "running" { // Running is true while restarting too
			return "", assert.AnError
		}
		return "running", nil
	}}
	require.NoError(t, Wait(ctx, eng, project, []Check{running}, time.Minute, rec))
	var said []string
	for _, e := range rec.Events() {
		said = append(said, e.Message)
	}
	assert.Regexp(t, name+` exited with code \d+ and Docker is restarting it \(its restart policy\): waiting for it, \d+s so far of at most 1m30s`, strings.Join(said, "\n"))
}
