package images

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// counting wraps an engine and counts the calls that cost time, so tests can
// prove a build or pull did (not) happen.
type counting struct {
	docker.Engine
	builds, pulls atomic.Int32
}

func (c *counting) ImageBuild(ctx context.Context, o docker.BuildOptions) (string, error) {
	c.builds.Add(1)
	return c.Engine.ImageBuild(ctx, o)
}

func (c *counting) ImagePull(ctx context.Context, ref string, fn func(docker.PullProgress)) error {
	c.pulls.Add(1)
	return c.Engine.ImagePull(ctx, ref, fn)
}

// fastRetry keeps failing pulls short in tests.
var fastRetry = Retry{Tries: 2, Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond, RateLimitWait: 20 * time.Millisecond}

// scratchSpec is a FROM scratch build through the lab's code path, labelled
// and removed like every test object.
func scratchSpec(t *testing.T, eng docker.Engine, name, df string) Spec {
	t.Helper()
	s := NewSpec(name, "0.0.0", []byte(df))
	s.Labels = map[string]string{dockertest.TestLabel: "1"}
	t.Cleanup(func() { _ = eng.ImageRemove(context.Background(), s.Ref) })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestBuildIsSkippedWhenUpToDateAndRedoneWhenContentChanges(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	ctx := ctxT(t)
	name := dockertest.UniqueName(t, "mltrain-test")
	s1 := scratchSpec(t, eng, name, "FROM scratch\nARG RAY_VERSION\nCOPY Dockerfile /Dockerfile\nLABEL mltrain.ray.version=\"${RAY_VERSION}\"\n")
	var rec progress.Recorder

	res, err := Ensure(ctx, eng, Request{Build: []Spec{s1}}, Options{Retry: fastRetry}, &rec)
	require.NoError(t, err)
	assert.Equal(t, []string{s1.Ref}, res.Built)
	assert.EqualValues(t, 1, eng.builds.Load())
	img, err := real.ImageInspect(ctx, s1.Ref)
	require.NoError(t, err)
	assert.Equal(t, s1.Hash, img.Labels[labels.ImageHash], "the content hash is the label")
	assert.Equal(t, "0.0.0", img.Labels[labels.ImageRayVersion], "RAY_VERSION reaches the Dockerfile as a build arg")
	assert.True(t, rec.Has("build "+s1.Ref, progress.Done))
	assert.True(t, saidPrefix(&rec, "build "+s1.Ref, "Step 3/"), "build output is streamed as progress")

	// Same content: no build call, same image.
	res, err = Ensure(ctx, eng, Request{Build: []Spec{s1}}, Options{}, &rec)
	require.NoError(t, err)
	assert.Equal(t, []string{s1.Ref}, res.UpToDate)
	assert.Empty(t, res.Built)
	assert.EqualValues(t, 1, eng.builds.Load(), "an up-to-date image is not rebuilt")
	again, err := real.ImageInspect(ctx, s1.Ref)
	require.NoError(t, err)
	assert.Equal(t, img.ID, again.ID)

	// --rebuild builds even so.
	_, err = Ensure(ctx, eng, Request{Build: []Spec{s1}}, Options{Rebuild: true}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 2, eng.builds.Load())

	// Changed content: a new hash, a new tag, a build.
	s2 := scratchSpec(t, eng, name, "FROM scratch\nCOPY Dockerfile /Dockerfile\nLABEL changed=yes\n")
	require.NotEqual(t, s1.Ref, s2.Ref)
	res, err = Ensure(ctx, eng, Request{Build: []Spec{s2}}, Options{}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{s2.Ref}, res.Built)
	assert.EqualValues(t, 3, eng.builds.Load())
	img2, err := real.ImageInspect(ctx, s2.Ref)
	require.NoError(t, err)
	assert.Equal(t, s2.Hash, img2.Labels[labels.ImageHash])
	assert.Equal(t, "yes", img2.Labels["changed"])
}

// A tag that exists with another content hash (e.g. built by an older
// mltrain from other bytes) is rebuilt, not trusted.
func TestBuildReplacesTagWithStaleHash(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	ctx := ctxT(t)
	s := scratchSpec(t, eng, dockertest.UniqueName(t, "mltrain-test"), "FROM scratch\nCOPY Dockerfile /Dockerfile\n")
	stale := s
	stale.Hash = "000000000000"
	_, err := Build(ctx, eng, stale, false, nil)
	require.NoError(t, err)
	r, err := Build(ctx, eng, s, false, nil)
	require.NoError(t, err)
	assert.True(t, r.Built)
	assert.EqualValues(t, 2, eng.builds.Load())
	img, err := real.ImageInspect(ctx, s.Ref)
	require.NoError(t, err)
	assert.Equal(t, s.Hash, img.Labels[labels.ImageHash])
	r, err = Build(ctx, eng, s, false, nil)
	require.NoError(t, err)
	assert.False(t, r.Built)
	assert.Equal(t, img.ID, r.ID)
}

func TestBuildFailingStepShowsStepAndLastLines(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	ctx := ctxT(t)
	base := dockertest.UniqueName(t, "mltrain-test-failer") + ":v1"
	dockertest.GoImage(t, real, base, "./testdata/failer", nil)
	t.Cleanup(func() { _ = real.ImageRemove(context.Background(), base) })
	s := scratchSpec(t, eng, dockertest.UniqueName(t, "mltrain-test"), "FROM "+base+"\nLABEL a=b\nRUN [\"/app\"]\n")
	var rec progress.Recorder

	_, err := Ensure(ctx, eng, Request{Build: []Spec{s}}, Options{Pull: PullNever}, &rec)
	require.Error(t, err)
	var se *StepError
	require.ErrorAs(t, err, &se)
	assert.Regexp(t, `^Step 3/\d+ : RUN \["/app"\]$`, se.Step)
	assert.Contains(t, se.Message, "returned a non-zero code: 3")
	assert.Contains(t, se.Tail, "failer line 30", "the step's last output lines are kept")
	assert.NotContains(t, se.Tail, "failer line 1", "only the last lines")
	assert.Contains(t, err.Error(), `failed at Step 3/`)
	assert.Contains(t, err.Error(), "failer line 29")
	assert.Contains(t, se.Tail, "failer: giving up", "stderr is kept, without colour codes")
	for _, l := range se.Tail {
		assert.NotContains(t, l, "\x1b")
		assert.NotContains(t, l, "Removing intermediate container")
	}
	var be *BuildError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, s.Ref, be.Ref)
	assert.True(t, rec.Has("build "+s.Ref, progress.Fail))
	assert.EqualValues(t, 0, eng.pulls.Load(), "the base was present")

	_, err = real.ImageInspect(ctx, s.Ref)
	assert.True(t, docker.IsNotFound(err), "a failed build tags nothing: %v", err)
}

// No registry is reachable where tests run, so this is the real path a
// user without network takes: the error names the image and the way to
// preload it.
func TestPullOfAbsentImageFailsNamingItAndPreload(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	ctx := ctxT(t)
	ref := "mltrain-test/absent-" + dockertest.UniqueName(t, "img") + ":1.0"
	var rec progress.Recorder

	_, err := Ensure(ctx, eng, Request{Pull: []string{ref}}, Options{Retry: fastRetry}, &rec)
	require.Error(t, err)
	t.Logf("what the user sees:\n%v", err)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{ref}, ue.Images)
	msg := err.Error()
	assert.Contains(t, msg, ref)
	assert.NotContains(t, msg, "mltrain images load", "said once, in the hint")
	assert.Equal(t, PullMissing, ue.Policy, "pulling was allowed and failed")
	// Without DNS for the registry (this machine) or with it (an absent
	// repository is refused): either way nothing retrying can fix.
	assert.EqualValues(t, 1, eng.pulls.Load(), "not retried")
	assert.True(t, rec.Has("pull "+ref, progress.Fail))
	_, err = real.ImageInspect(ctx, ref)
	assert.True(t, docker.IsNotFound(err))
}

func TestPullNeverWithMissingBaseIsClearAndPullsNothing(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	ctx := ctxT(t)
	absent := "mltrain-test/absent-" + dockertest.UniqueName(t, "base") + ":2.0"
	s := scratchSpec(t, eng, dockertest.UniqueName(t, "mltrain-test"), "ARG BASE="+absent+"\nFROM ${BASE}\n")

	_, err := Ensure(ctx, eng, Request{Build: []Spec{s}}, Options{Pull: PullNever}, nil)
	require.Error(t, err)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, PullNever, ue.Policy)
	assert.Contains(t, err.Error(), absent)
	assert.Contains(t, err.Error(), "--pull never")
	assert.EqualValues(t, 0, eng.pulls.Load())
	assert.EqualValues(t, 0, eng.builds.Load(), "no build is tried without its base")
}

func TestSaveThenLoadRoundTripsABuiltImage(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx := ctxT(t)
	s := scratchSpec(t, eng, dockertest.UniqueName(t, "mltrain-test"), "FROM scratch\nCOPY Dockerfile /Dockerfile\n")
	_, err := Ensure(ctx, eng, Request{Build: []Spec{s}}, Options{}, nil)
	require.NoError(t, err)
	orig, err := eng.ImageInspect(ctx, s.Ref)
	require.NoError(t, err)

	dir := t.TempDir()
	file := filepath.Join(dir, "lab-images.tar")
	absent := "mltrain-test/absent:" + s.Hash
	var rec progress.Recorder
	res, err := Save(ctx, eng, []string{s.Ref, absent}, file, &rec)
	require.NoError(t, err)
	assert.Equal(t, []string{s.Ref}, res.Saved)
	assert.Equal(t, []string{absent}, res.Missing)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, fi.Size(), res.Bytes)
	left, _ := filepath.Glob(filepath.Join(dir, ".*partial*"))
	assert.Empty(t, left, "no partial file is left behind")
	assert.True(t, rec.Has("save "+file, progress.Done))

	require.NoError(t, eng.ImageRemove(ctx, s.Ref))
	_, err = eng.ImageInspect(ctx, s.Ref)
	require.True(t, docker.IsNotFound(err))

	tags, err := Load(ctx, eng, file, &rec)
	require.NoError(t, err)
	assert.Equal(t, []string{s.Ref}, tags)
	back, err := eng.ImageInspect(ctx, s.Ref)
	require.NoError(t, err)
	assert.Equal(t, orig.ID, back.ID)
	assert.Equal(t, s.Hash, back.Labels[labels.ImageHash])

	// A loaded image counts as built: Ensure does not build it again.
	c := &counting{Engine: eng}
	r, err := Ensure(ctx, c, Request{Build: []Spec{s}}, Options{}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{s.Ref}, r.UpToDate)
	assert.EqualValues(t, 0, c.builds.Load())
}

func TestLoadRefusesCorruptArchivesAndTagsNothing(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx := ctxT(t)
	s := scratchSpec(t, eng, dockertest.UniqueName(t, "mltrain-test"), "FROM scratch\nCOPY Dockerfile /Dockerfile\nLABEL corrupt=test\n")
	_, err := Ensure(ctx, eng, Request{Build: []Spec{s}}, Options{}, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tar")
	_, err = Save(ctx, eng, []string{s.Ref}, good, nil)
	require.NoError(t, err)
	require.NoError(t, eng.ImageRemove(ctx, s.Ref))

	data, err := os.ReadFile(good)
	require.NoError(t, err)
	cases := map[string][]byte{
		"truncated": data[:len(data)/2],
		"garbage":   []byte(strings.Repeat("not a tar archive\n", 100)),
		"empty":     nil,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, name+".tar")
			require.NoError(t, os.WriteFile(f, b, 0o600))
			_, err := Load(ctx, eng, f, nil)
			require.Error(t, err)
			t.Logf("what the user sees: %v", err)
			var ce *CorruptArchiveError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, err.Error(), f)
			assert.ErrorIs(t, err, ErrBadArchive)
			_, err = eng.ImageInspect(ctx, s.Ref)
			assert.True(t, docker.IsNotFound(err), "nothing was tagged: %v", err)
		})
	}
}

func saidPrefix(rec *progress.Recorder, step, prefix string) bool {
	for _, e := range rec.Events() {
		if e.Step == step && e.Kind == progress.Update && strings.HasPrefix(e.Message, prefix) {
			return true
		}
	}
	return false
}
