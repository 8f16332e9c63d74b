package food11

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// mixed is a small dataset whose entries cross the extractor's 1 MiB buffer,
// are empty, stored and deflated, so every copy path is taken.
func mixed() ([]zfile, map[string]string) {
	files, want := dataset("", small(), zip.Store)
	for k, size := range []int{0, 1, 1 << 20, 3<<20 + 17} {
		d := make([]byte, size)
		rng := rand.New(rand.NewPCG(uint64(k), 11))
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		method := uint16(zip.Store)
		if k == 1 {
			method = zip.Deflate
		}
		files = append(files, zfile{name: fmt.Sprintf("validation/7_%d.jpg", 500+k), data: d, method: method})
		want[fmt.Sprintf("%s/validation/class_07/7_%d.jpg", Root, 500+k)] = string(d)
	}
	return files, want
}

// zipPlan reads a zip's plan as the host does.
func zipPlan(t *testing.T, zp string) *plan {
	t.Helper()
	zr, err := openZip(zp)
	require.NoError(t, err)
	t.Cleanup(func() { zr.Close() })
	p, err := makePlan(&zr.Reader, zp)
	require.NoError(t, err)
	return p
}

// messages decodes the extractor's protocol output.
func messages(t *testing.T, out []byte) []extractorMsg {
	t.Helper()
	var ms []extractorMsg
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m extractorMsg
		require.NoError(t, json.Unmarshal(l, &m), "line %q", l)
		ms = append(ms, m)
	}
	return ms
}

func TestExtractorWritesThePlanByteForByte(t *testing.T) {
	dir := t.TempDir()
	files, want := mixed()
	zp := writeZip(t, dir, "mixed.zip", files)
	dst := filepath.Join(dir, "vol")
	var out bytes.Buffer
	require.Equal(t, 0, runExtractor(&out, zp, dst, planDigest(zipPlan(t, zp))), out.String())

	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dst, p)
		got[filepath.ToSlash(rel)] = string(b)
		fi, _ := d.Info()
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), rel)
		assert.True(t, fi.ModTime().Equal(time.Date(2016, 5, 1, 12, 0, 0, 0, time.UTC)), "%s has the zip's time, not %s", rel, fi.ModTime())
		return err
	}))
	assert.Equal(t, want, got)
	for _, d := range dirsOf() {
		fi, err := os.Stat(filepath.Join(dst, d))
		require.NoError(t, err, "every class folder exists, even an empty one")
		assert.True(t, fi.IsDir())
	}
	ms := messages(t, out.Bytes())
	assert.True(t, ms[0].Ready, "ready comes first")
	last := ms[len(ms)-1]
	assert.True(t, last.Done)
	assert.Equal(t, len(want), last.Files)
	assert.Positive(t, last.MaxRSS)
}

func TestExtractorRefusesAnotherZipWithoutWriting(t *testing.T) {
	dir := t.TempDir()
	files, _ := mixed()
	zp := writeZip(t, dir, "a.zip", files)
	other := writeZip(t, dir, "b.zip", files[1:])
	dst := filepath.Join(dir, "vol")
	var out bytes.Buffer
	assert.Equal(t, 0, runExtractor(&out, zp, dst, planDigest(zipPlan(t, other))))
	ms := messages(t, out.Bytes())
	require.Len(t, ms, 1)
	assert.Equal(t, planDigest(zipPlan(t, zp)), ms[0].Mismatch)
	assert.NoDirExists(t, dst, "nothing written for a zip that is not the host's")
}

func TestExtractorNamesTheCorruptEntry(t *testing.T) {
	dir := t.TempDir()
	files, _ := mixed()
	big := files[len(files)-1] // 3 MiB, stored
	good := writeZip(t, dir, "good.zip", files)
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	i := bytes.Index(b, big.data[2<<20:2<<20+64])
	require.Positive(t, i)
	b[i+5] ^= 0xff
	corrupt := filepath.Join(dir, "corrupt.zip")
	require.NoError(t, os.WriteFile(corrupt, b, 0o644))

	var out bytes.Buffer
	assert.Equal(t, 1, runExtractor(&out, corrupt, filepath.Join(dir, "vol"), planDigest(zipPlan(t, corrupt))))
	ms := messages(t, out.Bytes())
	last := ms[len(ms)-1]
	assert.True(t, last.CRC)
	assert.Equal(t, big.name, last.Entry)
	assert.Contains(t, last.Error, "CRC-32 mismatch")
}

// The host's reading of the protocol: lines split anywhere, stray output
// kept for the error message, errors mapped back to their sentinels.
func TestProtocolResults(t *testing.T) {
	p := &plan{entries: make([]entry, 3), bytes: 30}
	feed := func(lines ...string) *protocol {
		var rec progress.Recorder
		pr := &protocol{rep: &rec, step: "s", total: 30}
		all := strings.Join(lines, "\n") + "\n"
		for i := 0; i < len(all); i += 7 { // arbitrary chunking
			_, _ = pr.Write([]byte(all[i:min(i+7, len(all))]))
		}
		pr.flush()
		return pr
	}
	_, err := feed(`{"ready":true}`, `{"bytes":10}`, `{"done":true,"files":3,"bytes":30,"maxrss":2048}`).result("v", "z.zip", docker.ContainerDetails{}, p)
	require.NoError(t, err)

	_, err = feed(`{"ready":true}`, `{"done":true,"files":2,"bytes":20}`).result("v", "z.zip", docker.ContainerDetails{}, p)
	require.ErrorContains(t, err, "wrote 2 files")

	_, err = feed(`{"ready":true}`, `{"error":"CRC-32 mismatch","entry":"training/1_1.jpg","crc":true}`).result("v", "z.zip", docker.ContainerDetails{ExitCode: 1}, p)
	require.ErrorIs(t, err, zip.ErrChecksum)
	assert.Contains(t, err.Error(), "z.zip: entry training/1_1.jpg")

	_, err = feed(`{"ready":true}`, `{"error":"write x: no space left on device","entry":"e","nospace":true}`).result("v", "z.zip", docker.ContainerDetails{ExitCode: 1}, p)
	require.ErrorIs(t, err, syscall.ENOSPC)
	var re *RerunError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, re.Do, "free space", "the fix, before the command layer adds the re-run")

	_, err = feed(`{"ready":true}`, `{"bytes":10}`).result("v", "z.zip", docker.ContainerDetails{ExitCode: 137, OOMKilled: true}, p)
	require.ErrorContains(t, err, "exited with code 137, killed for lack of memory")
	assert.False(t, errors.Is(err, errNoExtractor), "after ready, a failure is the load's")

	_, err = feed(`/x/mltrain: error while loading shared libraries: libc.so.6`).result("v", "z.zip", docker.ContainerDetails{ExitCode: 127}, p)
	require.ErrorIs(t, err, errNoExtractor)
	assert.Contains(t, err.Error(), "error while loading shared libraries")

	_, err = feed(`{"mismatch":"abc"}`).result("v", "z.zip", docker.ContainerDetails{}, p)
	require.ErrorIs(t, err, errNoExtractor)
	assert.Contains(t, err.Error(), "another file at z.zip")
}

func TestFindSelfNamesLibrariesBySoname(t *testing.T) {
	s, err := findSelf()
	require.NoError(t, err)
	assert.FileExists(t, s.exe)
	if s.loader == "" {
		assert.Empty(t, s.libs, "a static binary needs no libraries")
		return
	}
	assert.FileExists(t, s.loader)
	require.NotEmpty(t, s.libs)
	for name, p := range s.libs {
		assert.FileExists(t, p)
		assert.Contains(t, name, ".so", "%s -> %s", name, p)
	}
}
