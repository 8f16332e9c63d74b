package ray_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// modelled is the Ray-faithful double with a fake clock and Ray's timings.
func modelled(t *testing.T) (*raytest.Modelled, *ray.Client, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	m := raytest.NewModel(t, raymodel.Config{Now: clk.now}, "tok", raytest.LabNodes()...)
	c, err := ray.New(ray.Options{Address: m.URL, Token: "tok"})
	require.NoError(t, err)
	return m, c, clk
}

func TestStoppingAnUnplacedJobDoesNothingKillingItsSupervisorEndsIt(t *testing.T) {
	_, c, clk := modelled(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py", SubmissionID: "big", EntrypointNumGPUs: 2})
	require.NoError(t, err)
	stopped, err := c.Stop(ctx, id)
	require.NoError(t, err)
	assert.True(t, stopped)
	clk.t = clk.t.Add(899 * time.Second)
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, ray.Pending, j.Status, "stop does nothing to a job whose supervisor was never placed")

	a, ok, err := c.JobSupervisor(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "PENDING_CREATION", a.State)
	require.NoError(t, c.KillActor(ctx, a.ActorID))
	clk.t = clk.t.Add(time.Second)
	j, err = c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrActorDied, j.ErrorType)
	assert.Error(t, c.KillActor(ctx, a.ActorID), "it is dead already")
}

func TestAnUnplacedJobFailsAtTheStartTimeout(t *testing.T) {
	_, c, clk := modelled(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 2})
	require.NoError(t, err)
	clk.t = clk.t.Add(901 * time.Second)
	j, err := c.Job(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrStartTimeout, j.ErrorType)
}

// The runner uploads its workspace once and reuses the URI: once no job
// references the package and the pin of the last GET expired, Ray deleted
// it, and a job submitted with the old URI fails. Asking again (GET, then
// PUT when gone) before each submission is what keeps it.
func TestAPackageReusedAfterItsPinExpiredIsGone(t *testing.T) {
	_, c, clk := modelled(t)
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte("print(1)\n"), 0o644))
	prep, err := c.PrepareRuntimeEnv(ctx, map[string]any{"working_dir": dir}, dir)
	require.NoError(t, err)
	require.True(t, prep.Uploaded)
	first, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "sleep 1", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)
	clk.t = clk.t.Add(11 * time.Minute)
	_, err = c.Stop(ctx, first)
	require.NoError(t, err)

	stale, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "sleep 1", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)
	j, err := c.Job(ctx, stale)
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrRuntimeEnv, j.ErrorType)

	up, err := c.UploadPackage(ctx, prep.Package)
	require.NoError(t, err)
	assert.True(t, up, "gone from the GCS: uploaded again")
	again, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "sleep 1", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)
	j, err = c.Job(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, ray.Running, j.Status)
}

func TestARestartedHeadListsOnlyItselfAndForgetsJobs(t *testing.T) {
	m, c, _ := modelled(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "sleep 100"})
	require.NoError(t, err)
	before, err := c.Version(ctx)
	require.NoError(t, err)
	m.RestartHead()
	nodes, err := c.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	assert.True(t, nodes[0].IsHeadNode)
	_, err = c.Job(ctx, id)
	assert.True(t, ray.IsNotFound(err), "the new cluster never heard of the job: %v", err)
	after, err := c.Version(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, before.SessionName, after.SessionName, "a new session")
}

func TestModelledDashboardDemandsTheToken(t *testing.T) {
	m, _, _ := modelled(t)
	ctx := context.Background()
	none, err := ray.New(ray.Options{Address: m.URL})
	require.NoError(t, err)
	_, err = none.Nodes(ctx)
	assert.ErrorIs(t, err, ray.ErrAuthMissing)
	wrong, err := ray.New(ray.Options{Address: m.URL, Token: "nope"})
	require.NoError(t, err)
	_, err = wrong.Jobs(ctx)
	assert.ErrorIs(t, err, ray.ErrAuthInvalid)
}
