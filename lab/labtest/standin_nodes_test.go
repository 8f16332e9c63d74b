package labtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/lab/plan"
)

// How the stand-in Ray sees a worker go, as Ray does (docs/ray-fidelity.md):
// a stopped container (docker stop's SIGTERM) unregisters its raylet, so
// the node is DEAD at once with "received SIGTERM"; a raylet that died
// without a word refuses the head's health checks at once, so its node is
// DEAD after failures x period; a worker cut off the network (its raylet
// runs on, unreachable) makes each check wait out its timeout, so its node
// stays ALIVE longest, failures x (period + timeout). Ray's defaults
// (3000 ms, 10000 ms, 5 failures: ~15 s and ~65 s) are scaled by 1/5 here,
// ratio kept: ~3 s and ~13 s.
func TestStandinStopKillAndCutNetworkGoDeadInThatOrder(t *testing.T) {
	const period, timeout, failures = 600 * time.Millisecond, 2 * time.Second, 5
	s := upStandin(t, "services:\n  ray-head:\n    environment:\n      "+
		raymodel.EnvHealthCheckPeriod+": \"600\"\n      "+raymodel.EnvHealthCheckTimeout+": \"2000\"\n",
		func(o *plan.Options) { o.Workers = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inspect := func(service string) docker.ContainerDetails {
		d, err := s.eng.ContainerInspect(ctx, s.container(t, service))
		require.NoError(t, err)
		return d
	}
	nodeOf := func(service string) ray.Node {
		d := inspect(service)
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

	stopped, crashed, cut := nodeOf("ray-worker-0"), nodeOf("ray-worker-1"), nodeOf("ray-worker-2")
	require.NoError(t, s.eng.ContainerStop(ctx, s.container(t, "ray-worker-0"), 5*time.Second))
	// The stop returns once the container exited, after its unregister.
	n := stateOf(stopped.NodeID)
	assert.Equal(t, "DEAD", n.State, "a stopped worker's node is DEAD at once")
	assert.Contains(t, n.StateMessage, "received SIGTERM")

	// The network cut: the worker leaves the lab's network, its raylet
	// running; the head's checks to its address get no answer at all.
	c, err := client.New(client.FromEnv)
	require.NoError(t, err)
	defer c.Close()
	w2 := inspect("ray-worker-2")
	require.Len(t, w2.Networks, 1)
	for network := range w2.Networks {
		_, err = c.NetworkDisconnect(ctx, network, client.NetworkDisconnectOptions{Container: w2.ID})
		require.NoError(t, err)
	}
	start := time.Now()
	res, err := s.eng.Exec(ctx, s.container(t, "ray-worker-1"), []string{"/app", "kill-raylet"})
	require.NoError(t, err)
	require.Zero(t, res.ExitCode, res.Stderr)

	require.Eventually(t, func() bool { return stateOf(crashed.NodeID).State == "DEAD" }, time.Minute, 100*time.Millisecond)
	killedAfter := time.Since(start)
	assert.GreaterOrEqual(t, killedAfter, (failures-1)*period, "about health_check_failure_threshold x health_check_period_ms")
	assert.Contains(t, stateOf(crashed.NodeID).StateMessage, "health check failed")
	assert.Equal(t, "ALIVE", stateOf(cut.NodeID).State, "the cut node outlives the killed one: its checks are still waiting out their timeouts")

	require.Eventually(t, func() bool { return stateOf(cut.NodeID).State == "DEAD" }, time.Minute, 100*time.Millisecond)
	cutAfter := time.Since(start)
	t.Logf("DEAD after: the killed node %s, the cut one %s", killedAfter.Round(time.Millisecond), cutAfter.Round(time.Millisecond))
	assert.GreaterOrEqual(t, cutAfter, failures*(period+timeout)-2*period-timeout,
		"about health_check_failure_threshold x (health_check_period_ms + health_check_timeout_ms)")
	assert.Greater(t, cutAfter, killedAfter+failures*timeout/2)
	assert.Contains(t, stateOf(cut.NodeID).StateMessage, "health check failed")
}
