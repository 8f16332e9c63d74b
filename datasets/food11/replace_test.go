package food11

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// damagedZip writes files plus one 256 KiB image as name, then flips a byte
// inside that image's data: the central directory stays true, its CRC-32
// does not.
func damagedZip(t *testing.T, dir, name string, files []zfile) string {
	t.Helper()
	big := bytes.Repeat([]byte("food"), 64<<10)
	big[5000] = 'x' // a mark to find it by
	p := writeZip(t, dir, name, append(files, zfile{name: "training/5_900.jpg", data: big, method: zip.Store}))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	i := bytes.Index(b, big[4990:5010])
	require.Greater(t, i, 0)
	b[i+100] ^= 0xff
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// loaded is e's volume loaded from a good zip; it returns the zip's digest
// and what the volume holds.
func loaded(t *testing.T, e *testEnv) (string, map[string]string) {
	t.Helper()
	files, want := dataset("", small(), zip.Store)
	res, err := Run(context.Background(), e.eng, e.opts(writeZip(t, e.dir, "good.zip", files)))
	require.NoError(t, err)
	return res.Digest, want
}

// untouched asserts that e's volume still holds the load of digest.
func untouched(t *testing.T, e *testEnv, digest string, want map[string]string, writes int32, rec *progress.Recorder) {
	t.Helper()
	assert.Equal(t, writes, e.eng.writes.Load(), "nothing was written into the volume")
	for _, ev := range rec.Events() {
		assert.NotContains(t, ev.Message, "emptying volume")
	}
	m := e.manifest(t)
	require.NotNil(t, m, "the loaded dataset keeps its manifest")
	assert.Equal(t, digest, m.Source.SHA256)
	assert.Equal(t, want, e.listBack(t))
}

// Issues 31 and 32, item 4: a zip with one damaged member never replaces a
// loaded dataset, with or without --force: every member's CRC-32 is
// checked before the volume is emptied.
func TestDamagedZipNeverReplacesALoadedDataset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	digest, want := loaded(t, e)
	files, _ := dataset("", map[string]int{"training": 33, "validation": 22, "evaluation": 22}, zip.Store)
	bad := damagedZip(t, e.dir, "damaged.zip", files)

	for _, force := range []bool{false, true} {
		var rec progress.Recorder
		o := e.opts(bad)
		o.Force, o.Reporter = force, &rec
		writes := e.eng.writes.Load()
		_, err := Run(ctx, e.eng, o)
		require.Error(t, err)
		assert.ErrorIs(t, err, zip.ErrChecksum)
		assert.Contains(t, err.Error(), "entry training/5_900.jpg: CRC-32 mismatch")
		assert.Contains(t, err.Error(), "volume "+e.volume+" was not touched")
		next := nextOf(t, err)
		assert.Contains(t, next, "load another with 'mltrain data food11 --zip PATH --volume "+e.volume)
		untouched(t, e, digest, want, writes, &rec)
	}

	// Downloaded: the next step names the damaged download and the user's
	// URL and volume.
	body, err := os.ReadFile(bad)
	require.NoError(t, err)
	srv := httptest.NewServer(&fileServer{body: body})
	defer srv.Close()
	var rec progress.Recorder
	o := e.opts("")
	o.URL, o.CacheDir, o.Reporter = srv.URL+"/mirror.zip", t.TempDir(), &rec
	writes := e.eng.writes.Load()
	res, err := Run(ctx, e.eng, o)
	require.ErrorIs(t, err, zip.ErrChecksum)
	require.NotNil(t, res.Download)
	assert.Equal(t, "delete the damaged download "+res.Download.Path+", then run 'mltrain data food11 --url "+o.URL+" --volume "+e.volume+"' to download it again", nextOf(t, err))
	untouched(t, e, digest, want, writes, &rec)
}

// Issues 31 and 32, item 4: a zip that lacks a whole class is refused,
// before any volume is made or touched, unless --allow-missing-classes.
func TestMissingClassIsRefusedUnlessAllowed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	all, _ := dataset("", small(), zip.Store)
	var files []zfile
	for _, f := range all {
		if !strings.HasPrefix(f.name, "validation/10_") {
			files = append(files, f)
		}
	}
	zp := writeZip(t, e.dir, "no-class-10.zip", files)

	_, err := Run(ctx, e.eng, e.opts(zp))
	var mc *MissingClassesError
	require.ErrorAs(t, err, &mc)
	assert.Equal(t, []string{"validation/class_10"}, mc.Missing)
	assert.Contains(t, err.Error(), "no-class-10.zip lacks whole classes: validation/class_10 has no images")
	assert.Equal(t, "load the course's zip with 'mltrain data food11 --volume "+e.volume+"', or this one anyway with 'mltrain data food11 --zip "+zp+" --volume "+e.volume+" --allow-missing-classes'", nextOf(t, err))
	_, ierr := e.eng.VolumeInspect(ctx, e.volume)
	assert.True(t, docker.IsNotFound(ierr), "no volume was made (inspect: %v)", ierr)

	// Over a loaded dataset, from a URL: refused, the dataset stays.
	digest, want := loaded(t, e)
	body, err := os.ReadFile(zp)
	require.NoError(t, err)
	srv := httptest.NewServer(&fileServer{body: body})
	defer srv.Close()
	var rec progress.Recorder
	o := e.opts("")
	o.URL, o.CacheDir, o.Reporter = srv.URL+"/mirror.zip", t.TempDir(), &rec
	writes := e.eng.writes.Load()
	_, err = Run(ctx, e.eng, o)
	require.ErrorAs(t, err, &mc)
	assert.Contains(t, nextOf(t, err), "this one anyway with 'mltrain data food11 --url "+o.URL+" --volume "+e.volume+" --allow-missing-classes'")
	untouched(t, e, digest, want, writes, &rec)

	// Asked for: loaded, with the empty class named.
	o = e.opts(zp)
	o.AllowMissingClasses = true
	res, err := Run(ctx, e.eng, o)
	require.NoError(t, err)
	assert.Contains(t, res.Warnings, "validation/class_10 is empty; all 11 classes are expected in every split")
	assert.Equal(t, 0, e.manifest(t).Counts["validation"][10])
	assert.Equal(t, len(files), e.manifest(t).Files)
}
