package raymodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// clock is a fake clock tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time             { return c.t }
func (c *clock) add(d time.Duration) *clock { c.t = c.t.Add(d); return c }

// lab is the lab's shape: a CPU head and two one-GPU workers, with Ray's
// default timings unless cfg changes them.
func lab(t *testing.T, cfg raymodel.Config) (*raymodel.Cluster, *clock, []string) {
	t.Helper()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg.Now = clk.now
	c := raymodel.New(cfg)
	ids := []string{
		c.Join(raymodel.NodeSpec{IP: "10.0.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}}),
		c.Join(raymodel.NodeSpec{IP: "10.0.0.3", Total: raymodel.Resources{"CPU": 32, "GPU": 1}}),
		c.Join(raymodel.NodeSpec{IP: "10.0.0.4", Total: raymodel.Resources{"CPU": 32, "GPU": 1}}),
	}
	return c, clk, ids
}

func TestDefaultsAreRays(t *testing.T) {
	d := raymodel.Default()
	assert.Equal(t, 900*time.Second, d.JobStartTimeout)
	assert.Equal(t, 600*time.Second, d.PackagePin)
	assert.Equal(t, 60*time.Second, d.GCSReconnectTimeout)
	typical, longest := d.DeadAfter()
	assert.Equal(t, 15*time.Second, typical)
	assert.Equal(t, 65*time.Second, longest)
}

func TestJobWithoutEntrypointResourcesRunsOnTheHead(t *testing.T) {
	c, _, ids := lab(t, raymodel.Config{})
	j, err := c.Submit("a", ray.SubmitRequest{Entrypoint: "python train.py"})
	require.NoError(t, err)
	assert.Equal(t, ray.Running, j.Status)
	assert.Equal(t, ids[0], j.DriverNodeID)
	g, err := c.Submit("b", ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 1})
	require.NoError(t, err)
	assert.Equal(t, ids[1], g.DriverNodeID, "a GPU entrypoint runs on a worker")
	_, err = c.Submit("b", ray.SubmitRequest{Entrypoint: "x"})
	assert.ErrorContains(t, err, "already exists")
}

func TestStoppingAnUnplacedJobDoesNothingUntilTheStartTimeout(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{JobStartTimeout: 90 * time.Second})
	_, err := c.Submit("big", ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 2, EntrypointNumCPUs: 8})
	require.NoError(t, err)
	stopped, ok := c.Stop("big")
	assert.True(t, ok)
	assert.True(t, stopped, "Ray answers stopped: true, the actor exists by name")
	clk.add(89 * time.Second)
	j, _ := c.Job("big")
	assert.Equal(t, ray.Pending, j.Status, "the stop call waits on an actor that never starts")
	d, found := ray.FindDemand(ray.ParseDemands(c.ClusterStatus()), map[string]float64{"GPU": 2})
	require.True(t, found, c.ClusterStatus())
	assert.Equal(t, ray.DemandTasks, d.Kind)
	clk.add(2 * time.Second)
	j, _ = c.Job("big")
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrStartTimeout, j.ErrorType)
	assert.Contains(t, j.Message, "failed to start within 90.0 seconds")
	assert.NotContains(t, c.ClusterStatus(), "'GPU': 2.0", "a failed job's demand is gone")
}

func TestKillingAnUnplacedSupervisorFailsItsJob(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{})
	_, err := c.Submit("big", ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 2})
	require.NoError(t, err)
	var actor raymodel.Actor
	for _, a := range c.Actors() {
		if a.Name == raymodel.SupervisorName("big") {
			actor = a
		}
	}
	require.Equal(t, raymodel.ActorPending, actor.State)
	assert.Equal(t, raymodel.SupervisorNamespace, actor.Namespace)
	require.True(t, c.KillActor(actor.ActorID))
	j, _ := c.Job("big")
	assert.Equal(t, ray.Pending, j.Status, "the job monitor notices at its next loop")
	clk.add(time.Second)
	j, _ = c.Job("big")
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrActorDied, j.ErrorType)
	assert.False(t, c.KillActor(actor.ActorID), "a dead actor is not killed twice")
}

func TestStoppingARunningJobStopsIt(t *testing.T) {
	c, _, _ := lab(t, raymodel.Config{})
	_, err := c.Submit("a", ray.SubmitRequest{Entrypoint: "sleep 100"})
	require.NoError(t, err)
	stopped, _ := c.Stop("a")
	assert.True(t, stopped)
	j, _ := c.Job("a")
	assert.Equal(t, ray.Stopped, j.Status)
	stopped, _ = c.Stop("a")
	assert.False(t, stopped, "a terminal job has no supervisor left")
	require.NoError(t, c.Delete("a"))
	_, ok := c.Job("a")
	assert.False(t, ok)
}

func TestGPUFractionsPackAndWholeGPUsSpread(t *testing.T) {
	c, _, ids := lab(t, raymodel.Config{})
	var nodes []string
	for _, id := range []string{"f1", "f2", "f3"} {
		j, err := c.Submit(id, ray.SubmitRequest{Entrypoint: "x", EntrypointNumGPUs: 0.5})
		require.NoError(t, err)
		nodes = append(nodes, j.DriverNodeID)
	}
	// The hybrid policy packs below the spread threshold, then goes to the
	// less used node: w0, w1, then w0 again.
	assert.Equal(t, []string{ids[1], ids[2], ids[1]}, nodes)
	j, err := c.Submit("f4", ray.SubmitRequest{Entrypoint: "x", EntrypointNumGPUs: 0.5})
	require.NoError(t, err)
	assert.Equal(t, ids[2], j.DriverNodeID)
	j, err = c.Submit("whole", ray.SubmitRequest{Entrypoint: "x", EntrypointNumGPUs: 1})
	require.NoError(t, err)
	assert.Equal(t, ray.Pending, j.Status, "no GPU is whole any more")
}
