package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// goreleaser returns GoReleaser at the version the Makefile pins, built from
// its Go module into the test cache the first time (as .ci/run does up
// front, and make dist does when it is absent: the same path).
func goreleaser(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^GORELEASER_VERSION := (v\S+)$`).FindSubmatch(mk)
	require.NotNil(t, m, "the Makefile pins GORELEASER_VERSION")
	ver := string(m[1])
	return dockertest.CachedBinary(t, filepath.Join("goreleaser-"+ver, "goreleaser"), "goreleaser", func(dst string) error {
		t.Logf("building GoReleaser %s from its Go module (once; .ci/run does it up front)", ver)
		gobin, err := os.MkdirTemp(filepath.Dir(dst), "gobin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(gobin)
		cmd := exec.Command("go", "install", "github.com/goreleaser/goreleaser/v2@"+ver)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+gobin, "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			return &buildError{err, out}
		}
		return os.Rename(filepath.Join(gobin, "goreleaser"), dst)
	})
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// distResult is what one make dist wrote: dist/<tag>/'s files. The build's
// directory belongs to the first test that ran it and goes with it: later
// tests write the files out again (distDir).
type distResult struct {
	tag, version, commit string
	files                map[string][]byte
}

// distDir writes d's files out as make dist laid them: DIR/<tag>/<file>.
func distDir(t *testing.T, d distResult) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, d.tag), 0o755))
	for name, b := range d.files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, d.tag, name), b, 0o644))
	}
	return dir
}

var (
	distOnce sync.Once
	distRes  distResult
	distErr  string
)

// makeDist runs make dist once per test process, in a copy of the checkout
// made a git repository of its own (GoReleaser reads the commit), so the
// checkout's dist/ stays as it was.
func makeDist(t *testing.T) distResult {
	t.Helper()
	distOnce.Do(func() {
		distErr = "make dist failed in an earlier test" // until it succeeds
		bin := goreleaser(t)
		src := copyCheckout(t)
		git := func(args ...string) string {
			out, err := runIn(t, src, nil, "git", append([]string{"-c", "user.name=release test", "-c", "user.email=test@mltrain.invalid"}, args...)...)
			if err != nil {
				distErr = "git " + strings.Join(args, " ") + ": " + err.Error() + "\n" + out
			}
			return strings.TrimSpace(out)
		}
		distErr = ""
		git("init", "-q")
		git("add", "-A")
		git("commit", "-qm", "the checkout under test")
		// GoReleaser reads the commit only where a remote is set, as in a clone.
		git("remote", "add", "origin", "https://github.com/mltrain/mltrain.git")
		commit := git("rev-parse", "--short", "HEAD")
		if distErr != "" {
			return
		}
		if out, err := runIn(t, src, nil, "make", "dist", "GORELEASER="+bin); err != nil {
			distErr = "make dist: " + err.Error() + "\n" + out
			return
		}
		var meta struct{ Version string }
		b, err := os.ReadFile(filepath.Join(src, "build", "goreleaser", "metadata.json"))
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil {
			distErr = "GoReleaser's metadata.json: " + err.Error()
			return
		}
		// dist/ holds exactly the release's folder, named by its tag.
		entries, err := os.ReadDir(filepath.Join(src, "dist"))
		if err != nil || len(entries) != 1 || entries[0].Name() != "v"+meta.Version || !entries[0].IsDir() {
			distErr = fmt.Sprintf("dist/ should hold only v%s/: %v %v", meta.Version, entries, err)
			return
		}
		tag := entries[0].Name()
		distRes = distResult{tag: tag, version: meta.Version, commit: commit, files: map[string][]byte{}}
		dir := filepath.Join(src, "dist", tag)
		files, err := os.ReadDir(dir)
		if err != nil {
			distErr = err.Error()
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err != nil || f.IsDir() {
				distErr = fmt.Sprintf("dist/%s/%s: a file: %v", tag, f.Name(), err)
				return
			}
			distRes.files[f.Name()] = b
		}
	})
	if distErr != "" {
		t.Fatal(distErr)
	}
	return distRes
}

func archiveName(version, arch string) string {
	return "mltrain_" + version + "_linux_" + arch + ".tar.gz"
}

// crossCC says whether this machine can build linux/arm64 with cgo: CI
// installs Debian's gcc-aarch64-linux-gnu, so there it must.
func crossCC() bool {
	_, err := exec.LookPath("aarch64-linux-gnu-gcc")
	return err == nil || os.Getenv("CI") != ""
}

func TestMakeDistWritesChecksummedArchives(t *testing.T) {
	dockertest.Engine(t) // a real-build test: -short skips it outside CI
	d := makeDist(t)
	require.Regexp(t, `^\d+\.\d+\.\d+-dev\.`+d.commit+`$`, d.version, "a snapshot names its commit")

	sums := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(d.files["checksums.txt"])))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.Len(t, f, 2, "checksums.txt line %q", sc.Text())
		sums[f[1]] = f[0]
	}
	arches := []string{"amd64"}
	if crossCC() {
		arches = append(arches, "arm64")
	}
	want := []string{"install.sh"}
	for _, arch := range arches {
		name := archiveName(d.version, arch)
		want = append(want, name, packageName(t, d, "deb", arch), packageName(t, d, "rpm", arch))
		b, ok := d.files[name]
		require.True(t, ok, "dist/%s/%s", d.tag, name)

		files := untar(t, b)
		assert.ElementsMatch(t, []string{"mltrain", "README.md", "LICENSE"}, keys(files), name)
		bin := filepath.Join(t.TempDir(), "mltrain")
		require.NoError(t, os.WriteFile(bin, files["mltrain"], 0o755))
		f, err := elf.Open(bin)
		require.NoError(t, err)
		assert.Equal(t, map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch], f.Machine, name)
		f.Close()
		g := maxGLIBC(t, bin) // dynamically linked against glibc: cgo was on
		assert.False(t, versionLess(nodeGLIBC, g), "%s needs GLIBC_%s; Ubuntu 22.04 has %s", name, g, nodeGLIBC)
		if arch == "amd64" {
			checkRelease(t, bin, d)
		}
	}
	for _, name := range want {
		require.Contains(t, d.files, name, "dist/%s/", d.tag)
		h := sha256.Sum256(d.files[name])
		assert.Equal(t, hex.EncodeToString(h[:]), sums[name], "checksums.txt's sha256 of %s", name)
	}
	sort.Strings(want)
	assert.Equal(t, want, keys(sums), "checksums.txt covers the archives, the packages and install.sh")
	assert.ElementsMatch(t, append(want, "checksums.txt"), keys(d.files), "dist/%s/ holds the release and nothing else", d.tag)
}

// packageName is the one .deb or .rpm in dist/<tag>/ for arch, named the
// packager's own way (mltrain_<v>_amd64.deb, mltrain-<v>-1.x86_64.rpm).
func packageName(t *testing.T, d distResult, format, arch string) string {
	t.Helper()
	suffix := map[string]string{"deb/amd64": "_amd64.deb", "deb/arm64": "_arm64.deb",
		"rpm/amd64": ".x86_64.rpm", "rpm/arm64": ".aarch64.rpm"}[format+"/"+arch]
	var found []string
	for name := range d.files {
		if strings.HasPrefix(name, "mltrain") && strings.HasSuffix(name, suffix) {
			found = append(found, name)
		}
	}
	require.Len(t, found, 1, "one %s package for %s in dist/%s/: %v", format, arch, d.tag, keys(d.files))
	return found[0]
}

// checkRelease runs the archive's binary: it names the snapshot's version
// and commit and has NVML compiled in.
func checkRelease(t *testing.T, bin string, d distResult) {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").CombinedOutput()
	require.NoError(t, err, string(out))
	var v struct {
		Version, Commit, Date string
		NVML                  bool
	}
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	assert.Equal(t, d.version, v.Version)
	assert.Equal(t, d.commit, v.Commit)
	assert.NotEqual(t, "unknown", v.Date)
	assert.True(t, v.NVML, "NVML compiled in")
}

func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(b)))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		c, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = c
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
