package compose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

func loadYAML(t *testing.T, name, y string) *types.Project {
	t.Helper()
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  t.TempDir(),
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: []byte(y)}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName(name, true) })
	require.NoError(t, err)
	return p
}

// sleeperProject: "db" must be healthy before "app1" and "app2" start.
func sleeperProject(t *testing.T, name, img, appEnv string, dbExitAfter string) *types.Project {
	health := "health"
	if dbExitAfter != "" {
		health = "fail" // db never becomes healthy: it exits first
	}
	return loadYAML(t, name, fmt.Sprintf(`
services:
  db:
    image: %[1]s
    container_name: %[2]s-db
    environment: {EXIT_AFTER: "%[4]s", EXIT_CODE: "3"}
    healthcheck: {test: ["CMD", "/app", "%[5]s"], interval: 1s, retries: 3}
    volumes: ["data:/data"]
    stop_grace_period: 5s
  app1:
    image: %[1]s
    container_name: %[2]s-app1
    environment: {SETTING: "%[3]s"}
    depends_on: {db: {condition: service_healthy}}
  app2:
    image: %[1]s
    container_name: %[2]s-app2
    depends_on: {db: {condition: service_healthy}}
volumes:
  data: {}
`, img, name, appEnv, dbExitAfter, health))
}

func ids(t *testing.T, eng docker.Engine, project string) map[string]string {
	t.Helper()
	list, err := eng.ContainerList(context.Background(), map[string]string{labels.Project: project})
	require.NoError(t, err)
	out := map[string]string{}
	for _, c := range list {
		out[c.Labels[labels.Service]] = c.ID
	}
	return out
}

func cleanupProject(t *testing.T, eng docker.Engine, name string) {
	t.Cleanup(func() {
		_, _ = Down(context.Background(), eng, name, time.Second, true, nil)
	})
}

func TestApplyIdempotentAndTargetedRecreate(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var rec progress.Recorder
	res, err := Apply(ctx, eng, sleeperProject(t, name, img, "a", ""), ApplyOptions{Reporter: &rec, StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"app1", "app2", "db"}, res.Created)
	assert.True(t, rec.Has("service db", progress.Done))

	first := ids(t, eng, name)
	require.Len(t, first, 3)
	d, err := eng.ContainerInspect(ctx, name+"-app1")
	require.NoError(t, err)
	assert.Equal(t, "app1", d.Labels[labels.Service])
	assert.NotEmpty(t, d.Labels[labels.ConfigHash])
	assert.Contains(t, d.Env, "SETTING=a")
	assert.NotEmpty(t, d.Networks[name+"_default"], "on the project network")
	db, err := eng.ContainerInspect(ctx, name+"-db")
	require.NoError(t, err)
	assert.Contains(t, []string{"starting", "healthy"}, db.Health, "its healthcheck passed (run by mltrain or the engine)")
	assert.True(t, d.StartedAt.After(db.StartedAt), "dependents start after their healthy dependency")
	_, err = eng.VolumeInspect(ctx, name+"_data")
	require.NoError(t, err)

	nets, err := eng.NetworkList(ctx, "", map[string]string{labels.Project: name})
	require.NoError(t, err)
	require.Len(t, nets, 1)
	assert.Equal(t, name+"_default", nets[0].Name)

	// Second apply: nothing recreated, same IDs.
	res, err = Apply(ctx, eng, sleeperProject(t, name, img, "a", ""), ApplyOptions{StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Empty(t, res.Created)
	assert.Empty(t, res.Recreated)
	assert.Equal(t, []string{"app1", "app2", "db"}, res.Unchanged)
	assert.Equal(t, first, ids(t, eng, name))

	// Change app1 only: only app1 is recreated.
	res, err = Apply(ctx, eng, sleeperProject(t, name, img, "b", ""), ApplyOptions{StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"app1"}, res.Recreated)
	second := ids(t, eng, name)
	assert.NotEqual(t, first["app1"], second["app1"])
	assert.Equal(t, first["app2"], second["app2"])
	assert.Equal(t, first["db"], second["db"])

	// A stopped container with unchanged config is started again, not recreated.
	require.NoError(t, eng.ContainerStop(ctx, name+"-app2", 2*time.Second))
	res, err = Apply(ctx, eng, sleeperProject(t, name, img, "b", ""), ApplyOptions{StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"app2"}, res.Started)
	assert.Equal(t, second, ids(t, eng, name))

	// down keeps volumes; down --volumes removes them.
	removed, err := Down(ctx, eng, name, 2*time.Second, false, nil)
	require.NoError(t, err)
	assert.Len(t, removed, 3)
	assert.Empty(t, ids(t, eng, name))
	nets, err = eng.NetworkList(ctx, "", map[string]string{labels.Project: name})
	require.NoError(t, err)
	assert.Empty(t, nets, "down removes the lab's networks")
	_, err = eng.VolumeInspect(ctx, name+"_data")
	require.NoError(t, err, "down keeps volumes")
	_, err = Down(ctx, eng, name, 2*time.Second, true, nil)
	require.NoError(t, err)
	_, err = eng.VolumeInspect(ctx, name+"_data")
	assert.True(t, docker.IsNotFound(err), "down --volumes removes them: %v", err)
}

func TestApplyFailsFastWhenDependencyExits(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// db's healthcheck never passes and it exits with code 3 after 200ms.
	start := time.Now()
	_, err := Apply(ctx, eng, sleeperProject(t, name, img, "a", "200ms"), ApplyOptions{StopTimeout: time.Second, HealthTimeout: time.Minute})
	require.Error(t, err)
	var cf *ContainerFailure
	require.True(t, errors.As(err, &cf), "error is a container failure: %v", err)
	assert.Equal(t, name+"-db", cf.Container)
	assert.Contains(t, cf.Reason, "exited with code 3")
	assert.Contains(t, cf.Logs, "sleeper exiting with 3", "the failure carries the container's last log lines")
	assert.Equal(t, "see 'docker logs "+name+"-db' and 'docker inspect "+name+"-db'", cf.Troubleshoot())
	assert.Less(t, time.Since(start), 50*time.Second, "failed fast, long before the health timeout") // sanity bound, not a benchmark
	app, err := eng.ContainerInspect(ctx, name+"-app1")
	require.NoError(t, err, "every container is made up front")
	assert.False(t, app.Running, "dependents were never started")
	assert.True(t, app.StartedAt.IsZero(), "dependents were never started")
}

func TestApplyCancelledThenConverges(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)

	// Cancel while waiting for db to be healthy: every container was made
	// up front, only db was started.
	ctx, cancel := context.WithCancel(context.Background())
	rep := cancelOn{step: "service db", cancel: cancel}
	_, err := Apply(ctx, eng, sleeperProject(t, name, img, "a", ""), ApplyOptions{Reporter: rep, StopTimeout: time.Second})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	before := ids(t, eng, name)
	require.Len(t, before, 3)
	for svc, id := range before {
		d, err := eng.ContainerInspect(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, svc == "db", d.Running, "%s: only db was started before the cancel", svc)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	res, err := Apply(ctx2, eng, sleeperProject(t, name, img, "a", ""), ApplyOptions{StopTimeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"db"}, res.Unchanged, "the container started before the cancel is kept")
	assert.Equal(t, []string{"app1", "app2"}, res.Started, "the ones made but not started are started, not recreated")
	assert.Empty(t, res.Created)
	assert.Equal(t, before, ids(t, eng, name))
}

// cancelOn cancels the context when a step starts waiting.
type cancelOn struct {
	step   string
	cancel func()
}

func (c cancelOn) Report(e progress.Event) {
	if e.Step == c.step && e.Kind == progress.Update && strings.Contains(e.Message, "waiting") {
		c.cancel()
	}
}

func TestApplyRefusesForeignContainerAndMissingImage(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p := loadYAML(t, name, fmt.Sprintf("services:\n  a:\n    image: mltrain-test/absent:%s\n", name))
	_, err := Apply(ctx, eng, p, ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "image mltrain-test/absent:"+name+" is not on this host")
	assert.ErrorIs(t, err, ErrImageMissing)

	// A container with the lab's container name but not the lab's labels.
	foreign := name + "-foreign"
	_, err = eng.ContainerCreate(ctx, docker.ContainerSpec{Name: foreign, Config: newConfig(img, map[string]string{dockertest.TestLabel: "1"})})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.ContainerRemove(context.Background(), foreign, true) })
	p = loadYAML(t, name, fmt.Sprintf("services:\n  a:\n    image: %s\n    container_name: %s\n", img, foreign))
	_, err = Apply(ctx, eng, p, ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not part of lab")
	assert.Contains(t, clierr.Hint(err), "docker rm -f "+foreign)
}
