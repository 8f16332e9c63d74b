package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/service"
)

// A worker whose raylet died while its container runs on must not pass its
// healthcheck: the check asks this node's own dashboard agent (which exits
// with the raylet), not the head's GCS, which is still fine.
func TestWorkerHealthcheckFollowsItsOwnRaylet(t *testing.T) {
	s := newStandinLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := s.up(ctx)
	require.NoError(t, err)
	id := s.ids()[service.WorkerService(0)]
	d, err := s.eng.ContainerInspect(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, d.Config.Healthcheck)
	test := d.Config.Healthcheck.Test
	require.Equal(t, "CMD", test[0])
	assert.Equal(t, service.DefaultHealthcheck(service.RoleWorker), test, "the plan's check is what the container runs")
	assert.Contains(t, strings.Join(d.Config.Cmd, " "), "--dashboard-agent-listen-port=52365", "the agent port is pinned")
	assert.Contains(t, d.Env, service.AgentPortEnv+"=52365", "the check is told the same port")

	res, err := s.eng.Exec(ctx, id, test[1:])
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "a healthy worker passes: %s%s", res.Stdout, res.Stderr)

	// The raylet dies; the container (ray start --block) keeps running.
	res, err = s.eng.Exec(ctx, id, []string{"/app", "kill-raylet"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Eventually(t, func() bool {
		res, err := s.eng.Exec(ctx, id, test[1:])
		return err == nil && res.ExitCode != 0
	}, 10*time.Second, 200*time.Millisecond, "the check fails once this node's raylet is gone")
	d, err = s.eng.ContainerInspect(ctx, id)
	require.NoError(t, err)
	assert.True(t, d.Running, "the container itself still runs: only its healthcheck can tell")

	// Docker runs this very command (Config.Healthcheck); waiting for it to
	// say "unhealthy" would add the 60 s start period and 6 retries.

	// The other worker's check still passes.
	res, err = s.eng.Exec(ctx, s.ids()[service.WorkerService(1)], test[1:])
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "%s%s", res.Stdout, res.Stderr)
}
