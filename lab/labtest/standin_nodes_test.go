package labtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// How the stand-in Ray sees a worker go, as Ray does: a stopped container
// (docker stop's SIGTERM) unregisters its raylet, so the node is DEAD at
// once with "received SIGTERM"; a raylet that died without a word stays
// ALIVE until the head's health checks give up (here 5 x 2 s).
func TestStandinStopUnregistersACrashWaitsForTheHealthChecks(t *testing.T) {
	s := upStandin(t, "services:\n  ray-head:\n    environment:\n      "+raymodel.EnvHealthCheckPeriod+": \"2000\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodeOf := func(service string) ray.Node {
		d, err := s.eng.ContainerInspect(ctx, s.container(t, service))
		require.NoError(t, err)
		nodes, err := s.c.Ray.Nodes(ctx)
		require.NoError(t, err)
		for _, n := range nodes {
			for _, ip := range d.Networks {
				if n.NodeIP == ip && n.Alive() {
					return n
				}
			}
		}
		t.Fatalf("no ALIVE node of %s in %v", service, nodes)
		return ray.Node{}
	}
	stateOf := func(id string) ray.Node {
		nodes, err := s.c.Ray.Nodes(ctx)
		require.NoError(t, err)
		i := slices.IndexFunc(nodes, func(n ray.Node) bool { return n.NodeID == id })
		require.GreaterOrEqual(t, i, 0, id)
		return nodes[i]
	}

	stopped, crashed := nodeOf("ray-worker-0"), nodeOf("ray-worker-1")
	require.NoError(t, s.eng.ContainerStop(ctx, s.container(t, "ray-worker-0"), 5*time.Second))
	// The stop returns once the container exited, after its unregister.
	n := stateOf(stopped.NodeID)
	assert.Equal(t, "DEAD", n.State, "a stopped worker's node is DEAD at once")
	assert.Contains(t, n.StateMessage, "received SIGTERM")

	res, err := s.eng.Exec(ctx, s.container(t, "ray-worker-1"), []string{"/app", "kill-raylet"})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, res.Stderr)
	killed := time.Now()
	time.Sleep(4 * time.Second)
	assert.Equal(t, "ALIVE", stateOf(crashed.NodeID).State, "Ray has not noticed yet: its checks are still failing")
	require.Eventually(t, func() bool { return stateOf(crashed.NodeID).State == "DEAD" }, time.Minute, 250*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(killed), 8*time.Second, "about health_check_failure_threshold x health_check_period_ms")
	assert.Contains(t, stateOf(crashed.NodeID).StateMessage, "health check failed")
}
