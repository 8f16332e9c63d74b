package lifecycle_test

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// The core sequence without Docker: a fresh up creates every service in
// dependency order, proves it ready through the doubles, makes the bucket and
// leaves state.json; a second up changes nothing.
func TestUpOnTheFakeEngineIsFreshThenIdempotent(t *testing.T) {
	f := newFakeLab(t)
	res, err := f.up()
	require.NoError(t, err)
	assert.Len(t, res.Apply.Created, 7)
	assert.True(t, res.BucketMade)
	assert.False(t, res.CredentialsCreated, "the credentials file existed")
	assert.Contains(t, f.s3.Calls(), "PUT /ray/", "the bucket was created in the S3 double")
	creds, err := f.state.Credentials()
	require.NoError(t, err)
	secret, policies, ok := f.s3.User(creds.MinIOLabAccessKey)
	require.True(t, ok, "the lab user was created in MinIO")
	assert.Equal(t, creds.MinIOLabSecretKey, secret)
	assert.Equal(t, []string{store.BucketPolicyName(store.DefaultBucket)}, policies)
	var starts []string
	for _, s := range f.eng.CallsOf("start") {
		if strings.HasPrefix(s, "fakelab-") {
			starts = append(starts, s)
		}
	}
	require.Len(t, starts, 7)
	// Head, MinIO and Prometheus depend on nothing and start in parallel;
	// every service that depends on the head starts after it.
	head := slices.Index(starts, "fakelab-ray-head")
	for _, s := range []string{"fakelab-ray-worker-0", "fakelab-ray-worker-1", "fakelab-grafana", "fakelab-jupyter"} {
		assert.Greater(t, slices.Index(starts, s), head, "%s starts after the head it depends on", s)
	}
	st, err := f.state.State()
	require.NoError(t, err)
	assert.Equal(t, "fakelab", st.Project)
	info, err := os.Stat(f.state.File(state.StateFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	first := f.containers()

	writes := f.s3.AdminWrites()
	res, err = f.up()
	require.NoError(t, err, "a second up finds the user and its policy in place")
	assert.Equal(t, writes, f.s3.AdminWrites(), "and changes nothing in MinIO")
	assert.Empty(t, res.Apply.Created)
	assert.Empty(t, res.Apply.Recreated)
	assert.Empty(t, res.Apply.Started)
	assert.Len(t, res.Apply.Unchanged, 7)
	assert.False(t, res.BucketMade)
	assert.Len(t, f.labCreates(), 7, "a re-up creates no lab container")
	assert.Equal(t, first, f.containers())
}

// A first up whose service fails to start removes what it made, keeps the
// volumes, and says so; the next up converges from nothing.
func TestUpOnTheFakeEngineRollsBackAFailedFirstUp(t *testing.T) {
	f := newFakeLab(t)
	f.eng.StartFunc = failStartOf("fakelab-jupyter")
	_, err := f.up()
	require.Error(t, err)
	assert.ErrorIs(t, err, errStart)
	assert.Empty(t, f.containers(), "rollback removed this first up's containers")
	vols, err := f.eng.VolumeList(t.Context(), map[string]string{labels.Project: "fakelab"})
	require.NoError(t, err)
	assert.NotEmpty(t, vols, "rollback keeps volumes")

	f.eng.StartFunc = nil
	res, err := f.up()
	require.NoError(t, err)
	assert.Len(t, res.Apply.Created, 7)
}

// A host port held by another process is found before anything starts,
// named with the flag that moves the lab's port.
func TestUpOnTheFakeEngineNamesAPortHeldByAProcess(t *testing.T) {
	f := newFakeLab(t)
	port := f.opts.Lab.Ports[service.PortGrafana]
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	defer l.Close()
	_, err = f.up()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "host port "+strconv.Itoa(port)+" (service grafana) is in use by another process")
	assert.Contains(t, clierr.Hint(err), "--port grafana=PORT")
	assert.Empty(t, f.labCreates(), "nothing was created")
}

// down keeps every volume; --volumes removes the lab's own but never the
// dataset volume, which is not the project's.
func TestDownOnTheFakeEngineKeepsVolumesUnlessTold(t *testing.T) {
	f := newFakeLab(t)
	_, err := f.up()
	require.NoError(t, err)
	ctx := t.Context()
	removed, err := lifecycle.Down(ctx, f.eng, "fakelab", false, nil)
	require.NoError(t, err)
	assert.Len(t, removed, 7)
	assert.Empty(t, f.containers())
	vols, err := f.eng.VolumeList(ctx, map[string]string{labels.Project: "fakelab"})
	require.NoError(t, err)
	assert.Len(t, vols, 4, "ray-tmp, minio-data, prometheus-data, grafana-data stay")
	nets, err := f.eng.NetworkList(ctx, "", map[string]string{labels.Project: "fakelab"})
	require.NoError(t, err)
	assert.Empty(t, nets, "the network goes")

	_, err = lifecycle.Down(ctx, f.eng, "fakelab", true, nil)
	require.NoError(t, err)
	vols, err = f.eng.VolumeList(ctx, map[string]string{labels.Project: "fakelab"})
	require.NoError(t, err)
	assert.Empty(t, vols)
	_, err = f.eng.VolumeInspect(ctx, "fakelab-food11")
	assert.NoError(t, err, "the dataset volume survives down --volumes")
}

// cancelOn cancels the up when a step starts, as Ctrl-C would.
type cancelOn struct {
	step   string
	cancel context.CancelFunc
}

func (c cancelOn) Report(e progress.Event) {
	if e.Step == c.step && e.Kind == progress.Start {
		c.cancel()
	}
}

// An interrupted up's error says what it left: nothing started, a first
// up rolled back, or a running lab's containers kept.
func TestUpOnTheFakeEngineInterruptedSaysWhatItLeft(t *testing.T) {
	f := newFakeLab(t)
	upUntil := func(step string) error {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		_, err := lifecycle.Up(ctx, lifecycle.UpDeps{Engine: f.eng, Reporter: cancelOn{step, cancel}, Detect: f.deps(nil).Detect}, f.opts)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		return err
	}

	err := upUntil("detect host")
	assert.Equal(t, "no container was started; the state dir's credentials and compose.yaml are kept", clierr.Hint(err))
	assert.Empty(t, f.labCreates())

	f.rayBlind.Store(true) // Ray never sees the cluster: up waits for it
	err = upUntil("ready ray")
	assert.Equal(t, "rolled back: this first up's containers were removed; its volumes and the state dir's credentials and compose.yaml are kept", clierr.Hint(err))
	assert.Empty(t, f.containers())

	f.rayBlind.Store(false)
	_, err = f.up()
	require.NoError(t, err, "a re-run converges")
	f.rayBlind.Store(true)
	err = upUntil("ready ray")
	assert.Equal(t, "the lab's containers are kept as they were left, some perhaps not ready", clierr.Hint(err))
	assert.Len(t, f.containers(), 7, "a lab that was up keeps its containers")
}

// On a host without a registry, up says the DNS failure once, names both
// ways to have the images, and leaves nothing behind in the engine.
func TestUpOnTheFakeEngineWithoutARegistry(t *testing.T) {
	f := newFakeLab(t)
	minio := f.opts.Lab.Images[service.RoleMinIO]
	delete(f.eng.Images, minio)
	f.opts.Images.Pull = images.PullMissing
	f.opts.Images.Retry = images.Retry{Tries: 4, Initial: time.Millisecond, Max: time.Millisecond}
	f.eng.PullFunc = func(ref string) error {
		return errors.New("pull " + ref + `: Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host`)
	}
	_, err := f.up()
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "no such host"), "said once: %v", err)
	assert.Equal(t, []string{minio}, f.eng.CallsOf("pull"), "a DNS failure is not retried")
	hint := clierr.Hint(err)
	assert.Contains(t, hint, "'mltrain images load FILE'")
	assert.Contains(t, hint, "--image-head REF, --image-worker REF, --image-minio REF, --image-prometheus REF, --image-grafana REF, --image-jupyter REF")
	assert.Empty(t, f.labCreates(), "no container")
	_, err = f.eng.VolumeInspect(t.Context(), f.opts.Lab.DataVolume)
	assert.True(t, docker.IsNotFound(err), "no dataset volume either: %v", err)
}
