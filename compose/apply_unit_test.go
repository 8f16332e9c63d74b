package compose

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
)

// fakeWithImage is a fake engine that has img, whose healthchecks pass only
// after the engine's first interval (HealthDelay), as on the real engine.
func fakeWithImage(img string) *fake.Engine {
	f := fake.New()
	f.HealthDelay = 50 * time.Millisecond
	f.Images[img] = docker.Image{ID: "sha256:" + img}
	return f
}

func TestApplyOnTheFakeEngine(t *testing.T) {
	const img = "local/sleeper:1"
	eng := fakeWithImage(img)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	res, err := Apply(ctx, eng, sleeperProject(t, "p", img, "a", ""), ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app1", "app2", "db"}, res.Created)
	starts := eng.CallsOf("start")
	require.Len(t, starts, 3)
	assert.Equal(t, "p-db", starts[0], "the healthy-gated dependency starts first")
	db, err := eng.ContainerInspect(ctx, "p-db")
	require.NoError(t, err)
	app, err := eng.ContainerInspect(ctx, "p-app1")
	require.NoError(t, err)
	assert.Equal(t, "healthy", db.Health)
	assert.False(t, app.StartedAt.Before(db.StartedAt.Add(eng.HealthDelay)), "app1 waited until db was healthy")
	assert.Equal(t, "p", app.Labels[labels.Project])
	assert.NotEmpty(t, app.Labels[labels.ConfigHash])
	assert.Contains(t, app.Labels[labels.DependsOn], "db:service_healthy")

	// Nothing changed: nothing created, recreated or started.
	res, err = Apply(ctx, eng, sleeperProject(t, "p", img, "a", ""), ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app1", "app2", "db"}, res.Unchanged)
	assert.Len(t, eng.CallsOf("create"), 3)

	// app1's config changes: only it is recreated.
	res, err = Apply(ctx, eng, sleeperProject(t, "p", img, "b", ""), ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app1"}, res.Recreated)
	assert.Equal(t, []string{"app2", "db"}, res.Unchanged)

	// A service that left the project is an orphan: removed.
	proj := sleeperProject(t, "p", img, "b", "")
	delete(proj.Services, "app2")
	res, err = Apply(ctx, eng, proj, ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"p-app2"}, res.Removed)
	_, err = eng.ContainerInspect(ctx, "p-app2")
	assert.True(t, docker.IsNotFound(err))
}

func TestApplyOnTheFakeEngineRefusesAForeignContainerAndAMissingImage(t *testing.T) {
	const img = "local/sleeper:1"
	eng := fakeWithImage(img)
	eng.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: "p-db", State: "running"}, Running: true})
	_, err := Apply(context.Background(), eng, sleeperProject(t, "p", img, "a", ""), ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a container named p-db exists and is not part of lab \"p\"")

	_, err = Apply(context.Background(), fake.New(), sleeperProject(t, "q", img, "a", ""), ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image local/sleeper:1 is not on this host")
	assert.ErrorIs(t, err, ErrImageMissing)
}

func TestApplyOnTheFakeEngineStopsAtAFailedStart(t *testing.T) {
	const img = "local/sleeper:1"
	eng := fakeWithImage(img)
	boom := errors.New("no such device")
	eng.StartFunc = func(name string) error {
		if name == "p-db" {
			return boom
		}
		return nil
	}
	_, err := Apply(context.Background(), eng, sleeperProject(t, "p", img, "a", ""), ApplyOptions{})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"p-db"}, eng.CallsOf("start"), "dependents never start")

	// The engine's common start failures say what went wrong by kind.
	for msg, kind := range map[string]error{
		"Bind for 0.0.0.0:8265 failed: port is already allocated":        ErrPortTaken,
		"could not select device driver \"\" with capabilities: [[gpu]]": ErrNoGPURuntime,
	} {
		eng := fakeWithImage(img)
		eng.StartFunc = func(string) error { return errors.New(msg) }
		_, err := Apply(context.Background(), eng, sleeperProject(t, "p", img, "a", ""), ApplyOptions{})
		assert.ErrorIs(t, err, kind, msg)
		assert.Contains(t, err.Error(), msg, "the engine's words stay in the message")
	}
}
