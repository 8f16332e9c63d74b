package raymodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

func stateOf(c *raymodel.Cluster, id string) string {
	for _, n := range c.Nodes() {
		if n.NodeID == id {
			return n.State
		}
	}
	return "absent"
}

func TestASilentNodeStaysAliveUntilTheHealthChecksGiveUp(t *testing.T) {
	c, clk, ids := lab(t, raymodel.Config{HealthCheckPeriod: time.Second, HealthCheckFailures: 3})
	require.True(t, c.SilenceIP("10.0.0.3"))
	clk.add(2900 * time.Millisecond)
	assert.Equal(t, "ALIVE", stateOf(c, ids[1]))
	assert.False(t, c.Answering(ids[1]), "nothing new is placed on it")
	clk.add(100 * time.Millisecond)
	assert.Equal(t, "DEAD", stateOf(c, ids[1]))
	assert.False(t, c.Known(ids[1]), "a dead node never comes back")
}

// A graceful stop (docker stop: SIGTERM) unregisters the node: DEAD at
// once, with the raylet's reason, not after the health checks.
func TestAStoppedNodeIsDeadAtOnceWithItsReason(t *testing.T) {
	c, _, ids := lab(t, raymodel.Config{})
	require.True(t, c.UnregisterIP("10.0.0.3"))
	assert.Equal(t, "DEAD", stateOf(c, ids[1]), "no health-check wait")
	for _, n := range c.Nodes() {
		if n.NodeID == ids[1] {
			assert.Equal(t, raymodel.StoppedMessage, n.StateMessage)
			assert.Contains(t, n.StateMessage, "received SIGTERM")
		}
	}
	assert.False(t, c.Unregister(ids[1]), "a dead node unregisters once")
	assert.False(t, c.Known(ids[1]))
}

// A kill or crash leaves the raylet's address refusing: the checks fail
// fast (typical window); a cut network makes each check wait its timeout
// (longest window).
func TestAKilledNodeAndACutNodeWaitForTheHealthChecks(t *testing.T) {
	cfg := raymodel.Config{HealthCheckPeriod: time.Second, HealthCheckTimeout: 2 * time.Second, HealthCheckFailures: 3}
	typical, longest := cfg.DeadAfter()
	require.Equal(t, 3*time.Second, typical)
	require.Equal(t, 9*time.Second, longest)
	c, clk, ids := lab(t, cfg)
	require.True(t, c.Silence(ids[1], clk.now()))
	require.True(t, c.Cut(ids[2], clk.now()))
	clk.add(typical - time.Millisecond)
	assert.Equal(t, "ALIVE", stateOf(c, ids[1]))
	clk.add(time.Millisecond)
	assert.Equal(t, "DEAD", stateOf(c, ids[1]), "killed: DEAD after the typical window")
	assert.Equal(t, "ALIVE", stateOf(c, ids[2]), "cut: every check waits out its timeout")
	clk.add(longest - typical)
	assert.Equal(t, "DEAD", stateOf(c, ids[2]))
	for _, n := range c.Nodes() {
		if n.NodeID == ids[1] || n.NodeID == ids[2] {
			assert.Equal(t, raymodel.SilentMessage, n.StateMessage)
		}
	}
}

func TestAGracefullyStoppedDriverNodeFailsItsJobAtOnce(t *testing.T) {
	c, clk, ids := lab(t, raymodel.Config{})
	j, err := c.Submit("g", ray.SubmitRequest{Entrypoint: "x", EntrypointNumGPUs: 1})
	require.NoError(t, err)
	require.Equal(t, ids[1], j.DriverNodeID)
	require.True(t, c.Unregister(ids[1]))
	clk.add(time.Second) // the job monitor's next loop
	j, _ = c.Job("g")
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrActorDied, j.ErrorType)
}

func TestAStoppedDriverNodeFailsItsJob(t *testing.T) {
	c, clk, ids := lab(t, raymodel.Config{})
	j, err := c.Submit("g", ray.SubmitRequest{Entrypoint: "x", EntrypointNumGPUs: 1})
	require.NoError(t, err)
	require.Equal(t, ids[1], j.DriverNodeID)
	c.SilenceIP("10.0.0.3")
	clk.add(time.Second)
	j, _ = c.Job("g")
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrActorDied, j.ErrorType)
}

func TestAnUnreferencedPackageIsDeletedWhenItsPinExpires(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{PackagePin: 10 * time.Second})
	const name = "_ray_pkg_abc.zip"
	assert.False(t, c.PinPackage(name), "ray job submit asks first: 404, pinned anyway")
	c.PutPackage(name, []byte("zip"))
	env := map[string]any{"working_dir": "gcs://" + name}
	_, err := c.Submit("first", ray.SubmitRequest{Entrypoint: "sleep 1", RuntimeEnv: env})
	require.NoError(t, err)
	clk.add(11 * time.Second)
	_, ok := c.Package(name)
	assert.True(t, ok, "a running job's supervisor references it")
	c.Stop("first")
	_, ok = c.Package(name)
	assert.False(t, ok, "no job and no pin: the GCS deletes it")
	j, err := c.Submit("second", ray.SubmitRequest{Entrypoint: "sleep 1", RuntimeEnv: env})
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status, "submitted with the old URI, never pinned again")
	assert.Equal(t, raymodel.ErrRuntimeEnv, j.ErrorType)
	assert.Contains(t, j.Message, name)
}

func TestARePinnedPackageSurvives(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{PackagePin: 10 * time.Second})
	const name = "_ray_pkg_def.zip"
	c.PinPackage(name)
	c.PutPackage(name, []byte("zip"))
	clk.add(9 * time.Second)
	assert.True(t, c.PinPackage(name), "GET before the next submission pins it again")
	clk.add(9 * time.Second)
	j, err := c.Submit("later", ray.SubmitRequest{Entrypoint: "x", RuntimeEnv: map[string]any{"working_dir": "gcs://" + name}})
	require.NoError(t, err)
	assert.Equal(t, ray.Running, j.Status)
}

func TestAnUploadNobodyReferencedStays(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{PackagePin: time.Second})
	c.PutPackage("_ray_pkg_x.zip", []byte("zip"))
	clk.add(time.Hour)
	_, ok := c.Package("_ray_pkg_x.zip")
	assert.True(t, ok)
}

func TestARestartedHeadIsANewCluster(t *testing.T) {
	c, clk, ids := lab(t, raymodel.Config{GCSReconnectTimeout: 5 * time.Second})
	c.PinPackage("_ray_pkg_a.zip")
	c.PutPackage("_ray_pkg_a.zip", []byte("zip"))
	_, err := c.Submit("a", ray.SubmitRequest{Entrypoint: "x"})
	require.NoError(t, err)
	lost := clk.t
	head := c.RestartHead()
	nodes := c.Nodes()
	require.Len(t, nodes, 1, "the new GCS knows only its own head")
	assert.True(t, nodes[0].IsHeadNode)
	assert.NotEqual(t, ids[0], head, "a new node id")
	assert.Empty(t, c.Jobs())
	_, ok := c.Package("_ray_pkg_a.zip")
	assert.False(t, ok)
	assert.False(t, c.Known(ids[1]), "an old worker is unknown to it")
	clk.add(4 * time.Second)
	assert.False(t, c.RayletExits(lost))
	clk.add(time.Second)
	assert.True(t, c.RayletExits(lost), "its raylet gives up after gcs_rpc_server_reconnect_timeout_s")
	c.Join(raymodel.NodeSpec{IP: "10.0.0.3", Total: raymodel.Resources{"CPU": 32, "GPU": 1}})
	assert.Len(t, c.Nodes(), 2, "restarted by its restart policy, it joins as a new node")
}

func TestConfigFromRaysEnvironment(t *testing.T) {
	env := map[string]string{raymodel.EnvJobStartTimeout: "30", raymodel.EnvPackagePin: "5",
		raymodel.EnvHealthCheckPeriod: "500", raymodel.EnvGCSReconnect: "2"}
	c := raymodel.ConfigFromEnv(func(k string) string { return env[k] })
	assert.Equal(t, 30*time.Second, c.JobStartTimeout)
	assert.Equal(t, 5*time.Second, c.PackagePin)
	assert.Equal(t, 2*time.Second, c.GCSReconnectTimeout)
	typical, _ := c.DeadAfter()
	assert.Equal(t, 2500*time.Millisecond, typical)
	env = map[string]string{raymodel.EnvDeadAfter: "5s"}
	typical, _ = raymodel.ConfigFromEnv(func(k string) string { return env[k] }).DeadAfter()
	assert.Equal(t, 5*time.Second, typical)
	assert.Equal(t, raymodel.Default().JobStartTimeout, raymodel.ConfigFromEnv(func(string) string { return "" }).JobStartTimeout)
}
