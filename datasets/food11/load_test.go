package food11

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/progress"
)

// counting wraps the real engine and counts what can write into the volume
// (copies into containers, started extractors), so a test can prove a run
// wrote nothing. onCopy, when set, wraps the stream; onCreate may change or
// refuse a container before the engine sees it.
type counting struct {
	docker.Engine
	writes   atomic.Int32
	onCopy   func(io.Reader) io.Reader
	onCreate func(*docker.ContainerSpec) error
}

func (c *counting) CopyToContainer(ctx context.Context, id, dst string, r io.Reader) error {
	c.writes.Add(1)
	if c.onCopy != nil {
		r = c.onCopy(r)
	}
	return c.Engine.CopyToContainer(ctx, id, dst, r)
}

func (c *counting) ContainerCreate(ctx context.Context, spec docker.ContainerSpec) (string, error) {
	if c.onCreate != nil {
		if err := c.onCreate(&spec); err != nil {
			return "", err
		}
	}
	return c.Engine.ContainerCreate(ctx, spec)
}

func (c *counting) ContainerStart(ctx context.Context, id string) error {
	c.writes.Add(1)
	return c.Engine.ContainerStart(ctx, id)
}

// testEnv is a real engine with a unique volume and helper image, removed
// when the test ends.
type testEnv struct {
	eng    *counting
	volume string
	image  string
	labels map[string]string
	dir    string
}

var envSeq atomic.Int32

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	eng := dockertest.Engine(t)
	e := &testEnv{
		eng:    &counting{Engine: eng},
		volume: dockertest.UniqueName(t, fmt.Sprintf("food11-%d", envSeq.Add(1))),
		image:  "mltrain-test/empty:" + dockertest.UniqueName(t, "t"),
		labels: map[string]string{dockertest.TestLabel: "1"},
		dir:    t.TempDir(),
	}
	t.Cleanup(func() {
		ctx := context.Background()
		cs, _ := eng.ContainerList(ctx, map[string]string{LabelHelperVolume: e.volume})
		for _, c := range cs {
			_ = eng.ContainerRemove(ctx, c.ID, true)
		}
		if err := eng.VolumeRemove(ctx, e.volume); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		_ = eng.ImageRemove(ctx, e.image)
	})
	return e
}

func (e *testEnv) opts(zipPath string) Options {
	return Options{Zip: zipPath, Volume: e.volume, HelperImage: e.image, Labels: e.labels, CacheDir: e.dir}
}

// listBack reads every file of the volume back through the engine.
func (e *testEnv) listBack(t *testing.T) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := Walk(context.Background(), e.eng, e.volume, e.image, e.labels, func(f File) error {
		b, err := io.ReadAll(f.Body)
		if err != nil {
			return err
		}
		got[f.Path] = string(b)
		return nil
	})
	require.NoError(t, err)
	return got
}

// manifest reads the volume's manifest (nil when absent, or when the
// volume itself was never made).
func (e *testEnv) manifest(t *testing.T) *Manifest {
	t.Helper()
	if _, err := e.eng.VolumeInspect(context.Background(), e.volume); docker.IsNotFound(err) {
		return nil
	}
	m, err := ReadManifest(context.Background(), e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels})
	require.NoError(t, err)
	return m
}

func TestLoadCanonicalCountsListBackAndNoOp(t *testing.T) {
	e := newEnv(t)
	files, want := dataset("", CanonicalTotals, zip.Store)
	require.Len(t, want, CanonicalTotal)
	zp := writeZip(t, e.dir, "food11.zip", files)
	ctx := context.Background()

	var rec progress.Recorder
	o := e.opts(zp)
	o.Reporter = &rec
	res, err := Run(ctx, e.eng, o)
	require.NoError(t, err)
	assert.False(t, res.NoOp)
	assert.Equal(t, MethodExtractor, res.Method, "with the engine on this host the extractor runs: %v", rec.Events())
	assert.Positive(t, res.HelperPeakRSS)
	assert.Empty(t, res.Warnings, "canonical counts give no warning")
	assert.Equal(t, CanonicalTotal, res.Manifest.Files)
	assert.Equal(t, 9866, res.Manifest.Counts.Split("training"))
	assert.Len(t, res.Digest, 64)

	got := e.listBack(t)
	assert.Equal(t, want, got, "every file is in its class folder with its content")

	vol, err := e.eng.VolumeInspect(ctx, e.volume)
	require.NoError(t, err)
	assert.Equal(t, "food11", vol.Labels[LabelDataset])

	rep, err := Verify(ctx, e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels, Strict: true})
	require.NoError(t, err)
	assert.True(t, rep.OK)
	assert.Equal(t, CanonicalTotal, rep.Files)
	assert.True(t, rep.Found.Equal(res.Manifest.Counts))
	assert.Equal(t, res.Digest, rep.Manifest.Source.SHA256)

	// Same source again: the manifest says so, nothing is copied.
	before := e.eng.writes.Load()
	t0 := time.Now()
	res2, err := Run(ctx, e.eng, e.opts(zp))
	require.NoError(t, err)
	assert.True(t, res2.NoOp)
	assert.Equal(t, before, e.eng.writes.Load(), "a no-op run copies nothing into the volume")
	t.Logf("no-op run took %s", time.Since(t0))

	// --force rebuilds.
	o = e.opts(zp)
	o.Force = true
	res3, err := Run(ctx, e.eng, o)
	require.NoError(t, err)
	assert.False(t, res3.NoOp)
	assert.True(t, res3.Rebuilt)
	assert.Greater(t, e.eng.writes.Load(), before)
	assert.Equal(t, want, e.listBack(t))
}

func TestLoadWrapperFolderDeflateAndWarnings(t *testing.T) {
	e := newEnv(t)
	files, want := dataset("Food-11/", small(), zip.Deflate)
	zp := writeZip(t, e.dir, "wrapped.zip", files)
	ctx := context.Background()
	res, err := Run(ctx, e.eng, e.opts(zp))
	require.NoError(t, err)
	assert.Contains(t, res.Warnings, "training has 23 images; canonical Food-11 has 9,866")
	assert.Equal(t, want, e.listBack(t))

	rep, err := Verify(ctx, e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels})
	require.NoError(t, err, "non-canonical counts are warnings")
	assert.NotEmpty(t, rep.Warnings)
	_, err = Verify(ctx, e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels, Strict: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--strict")
	assert.Contains(t, nextOf(t, err), "'mltrain data food11 --force --volume "+e.volume+"'", "the course's zip goes into the user's volume")

	// --strict on load refuses before writing anything into a fresh volume.
	e2 := newEnv(t)
	o := e2.opts(zp)
	o.Strict = true
	_, err = Run(ctx, e2.eng, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "validation has 12 images")
	assert.Nil(t, e2.manifest(t))
	assert.Equal(t, int32(0), e2.eng.writes.Load())
}

func TestLoadRejectsBadZipsWithoutManifest(t *testing.T) {
	e := newEnv(t)
	good, _ := dataset("", small(), zip.Store)
	goodZip := writeZip(t, e.dir, "good.zip", good)
	ctx := context.Background()

	notZip := e.dir + "/not.zip"
	require.NoError(t, os.WriteFile(notZip, []byte("<html>not a zip</html>"), 0o644))
	b, err := os.ReadFile(goodZip)
	require.NoError(t, err)
	truncated := e.dir + "/truncated.zip"
	require.NoError(t, os.WriteFile(truncated, b[:len(b)/2], 0o644))

	cases := []struct {
		name, zip, want string
		traversal       bool
	}{
		{"not a zip", notZip, "is not a zip file", false},
		{"truncated", truncated, "is not a zip file, or is truncated", false},
		{"traversal", writeZip(t, e.dir, "trav.zip", append(good[:len(good):len(good)], zfile{name: "../../escape.jpg", data: []byte("x")})), "path traversal", true},
		{"bad name", writeZip(t, e.dir, "name.zip", append(good[:len(good):len(good)], zfile{name: "training/cake.png", data: []byte("x")})), "not <class>_<n>.jpg", false},
		{"class 12", writeZip(t, e.dir, "class.zip", append(good[:len(good):len(good)], zfile{name: "validation/12_1.jpg", data: []byte("x")})), "class 12 is outside 0-10", false},
		{"missing split", writeZip(t, e.dir, "split.zip", good[:23]), "split validation is missing", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(ctx, e.eng, e.opts(c.zip))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, c.traversal, errors.Is(err, ErrTraversal))
			assert.Nil(t, e.manifest(t))
			assert.Equal(t, int32(0), e.eng.writes.Load(), "a bad zip is refused before anything is written")
		})
	}
	_, err = Run(ctx, e.eng, e.opts(e.dir+"/absent.zip"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "absent.zip")
}

func TestForeignFolderNeedsForce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// A volume the course's loader filled: no mltrain label, no manifest.
	_, err := e.eng.VolumeEnsure(ctx, e.volume, e.labels)
	require.NoError(t, err)
	h, err := openHelper(ctx, e.eng, e.volume, e.image, e.labels, false)
	require.NoError(t, err)
	require.NoError(t, e.eng.CopyToContainer(ctx, h.id, "/data", dockertest.TarOf(map[string][]byte{"Food-11/training/class_00/0_0.jpg": []byte("course")})))
	h.close()

	files, want := dataset("", small(), zip.Store)
	zp := writeZip(t, e.dir, "food11.zip", files)
	_, err = Run(ctx, e.eng, e.opts(zp))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mltrain did not load")
	got := e.listBack(t)
	assert.Equal(t, "course", got["Food-11/training/class_00/0_0.jpg"], "nothing was touched")

	o := e.opts(zp)
	o.Force = true
	res, err := Run(ctx, e.eng, o)
	require.NoError(t, err)
	assert.True(t, res.Rebuilt)
	assert.Equal(t, want, e.listBack(t))
	vol, err := e.eng.VolumeInspect(ctx, e.volume)
	require.NoError(t, err)
	assert.Equal(t, "food11", vol.Labels[LabelDataset], "the rebuilt volume carries mltrain's labels")
}

func TestVerifyMissingVolume(t *testing.T) {
	e := newEnv(t)
	_, err := e.eng.VolumeEnsure(context.Background(), e.volume, e.labels) // so cleanup finds it
	require.NoError(t, err)
	_, err = Verify(context.Background(), e.eng, VerifyOptions{Volume: e.volume + "-absent", HelperImage: e.image, Labels: e.labels})
	require.Error(t, err)
	assert.True(t, docker.IsNotFound(err))
	assert.Contains(t, err.Error(), "does not exist")
}

func TestRunFromURLThenNoOpWithoutDownload(t *testing.T) {
	e := newEnv(t)
	files, want := dataset("", small(), zip.Deflate)
	zp := writeZip(t, e.dir, "src.zip", files)
	body, err := os.ReadFile(zp)
	require.NoError(t, err)
	fs := &fileServer{body: body}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	ctx := context.Background()
	o := e.opts("")
	o.URL = srv.URL + "/Food-11.zip"
	o.CacheDir = t.TempDir()
	res, err := Run(ctx, e.eng, o)
	require.NoError(t, err)
	require.NotNil(t, res.Download)
	sum := sha256.Sum256(body)
	assert.Equal(t, hex.EncodeToString(sum[:]), res.Digest)
	assert.Equal(t, o.URL, res.Manifest.Source.URL)
	assert.Equal(t, want, e.listBack(t))

	// Same URL again, even with the cache gone: the manifest answers.
	require.NoError(t, os.RemoveAll(o.CacheDir))
	copies := e.eng.writes.Load()
	res, err = Run(ctx, e.eng, o)
	require.NoError(t, err)
	assert.True(t, res.NoOp)
	assert.Nil(t, res.Download)
	assert.Len(t, fs.requests(), 1, "no second download")
	assert.Equal(t, copies, e.eng.writes.Load())
}

func TestDiskFullIsAClearErrorWithoutManifest(t *testing.T) {
	for _, method := range []string{MethodExtractor, MethodArchive} {
		t.Run(method, func(t *testing.T) { diskFullIsAClearErrorWithoutManifest(t, method) })
	}
}

func diskFullIsAClearErrorWithoutManifest(t *testing.T, method string) {
	e := newEnv(t)
	ctx := context.Background()
	// A 1 MiB tmpfs volume stands in for a full disk of the volume's own,
	// while Docker's root disk has room.
	tmpfsVolume(t, e, "1m")
	files, _ := dataset("", small(), zip.Store)
	files = append(files, zfile{name: "training/3_900.jpg", data: make([]byte, 3<<20), method: zip.Store})
	o := e.opts(writeZip(t, e.dir, "big.zip", files))
	o.Method = method
	_, err := Run(ctx, e.eng, o)
	require.Error(t, err)
	t.Log(err)
	require.ErrorIs(t, err, syscall.ENOSPC)
	var ns *NoSpaceError
	require.ErrorAs(t, err, &ns)
	// The full filesystem is named: the volume's own (tmpfs, 1m), not Docker's root.
	assert.Contains(t, err.Error(), "device=tmpfs, o=size=1m")
	assert.Contains(t, err.Error(), "mounted at ")
	var re *RerunError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, re.Do, "free space on that filesystem")
	assert.Nil(t, e.manifest(t))
	if method == MethodExtractor {
		// Refused before its first byte: the small disk is not left full.
		assert.Contains(t, err.Error(), "its filesystem has")
		h, err := openHelper(ctx, e.eng, e.volume, e.image, e.labels, false)
		require.NoError(t, err)
		defer h.close()
		has, err := h.exists(ctx, Root)
		require.NoError(t, err)
		assert.False(t, has, "no partial files")
	}
}
