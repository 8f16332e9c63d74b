package release

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// releaseServer serves files at /<tag>/<name> on loopback, as the release
// downloads do, and records the User-Agent of each request.
type releaseServer struct {
	*httptest.Server
	mu     sync.Mutex
	agents []string
}

func serveRelease(t *testing.T, tag string, files map[string][]byte) *releaseServer {
	t.Helper()
	s := &releaseServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		name, ok := strings.CutPrefix(r.URL.Path, "/"+tag+"/")
		b, found := files[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

// install runs install.sh with sh (dash on Debian: POSIX only) and returns
// its output and the install directory.
func install(t *testing.T, url, tag string, env ...string) (string, string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	env = append([]string{"MLTRAIN_VERSION=" + tag, "MLTRAIN_DOWNLOAD_URL=" + url, "MLTRAIN_INSTALL_DIR=" + dir}, env...)
	out, err := runIn(t, repoRoot(t), env, "sh", "install.sh")
	return out, dir, err
}

// releaseFiles is make dist's output as the release serves it.
func releaseFiles(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dockertest.Engine(t) // a real-build test: -short skips it outside CI
	d := makeDist(t)
	files := map[string][]byte{}
	for n, b := range d.files {
		files[n] = b
	}
	return d.version, files
}

func assertNothingInstalled(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing installed in %s", dir)
}

func TestInstallVerifiesAndInstalls(t *testing.T) {
	ver, files := releaseFiles(t)
	srv := serveRelease(t, "v"+ver, files)
	out, dir, err := install(t, srv.URL, "v"+ver)
	require.NoError(t, err, out)
	assert.Contains(t, out, "installed "+filepath.Join(dir, "mltrain"))
	assert.Contains(t, out, "mltrain "+ver+"\n", "it ran mltrain version")
	assert.Contains(t, out, "is not on your PATH")
	got, err := exec.Command(filepath.Join(dir, "mltrain"), "version", "--json").Output()
	require.NoError(t, err)
	assert.Contains(t, string(got), `"version": "`+ver+`"`)
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "only mltrain, no temporary file left")
}

func TestInstallRefusesATamperedArchive(t *testing.T) {
	ver, files := releaseFiles(t)
	name := archiveName(ver, "amd64")
	tampered := bytes.Clone(files[name])
	tampered[len(tampered)/2] ^= 0xff
	files[name] = tampered
	srv := serveRelease(t, "v"+ver, files)
	out, dir, err := install(t, srv.URL, "v"+ver)
	require.Error(t, err, out)
	assert.Contains(t, out, "sha256 of "+name)
	assert.Contains(t, out, "checksums.txt")
	assert.Contains(t, out, "nothing installed")
	assertNothingInstalled(t, dir)
}

func TestInstallRefusesAnArchiveWithoutChecksum(t *testing.T) {
	ver, files := releaseFiles(t)
	name := archiveName(ver, "amd64")
	var kept []string
	for _, l := range strings.Split(string(files["checksums.txt"]), "\n") {
		if !strings.HasSuffix(l, " "+name) {
			kept = append(kept, l)
		}
	}
	require.NotEqual(t, string(files["checksums.txt"]), strings.Join(kept, "\n"), "the entry was there")
	files["checksums.txt"] = []byte(strings.Join(kept, "\n"))
	srv := serveRelease(t, "v"+ver, files)
	out, dir, err := install(t, srv.URL, "v"+ver)
	require.Error(t, err, out)
	assert.Contains(t, out, "checksums.txt of v"+ver+" has no sha256 for "+name)
	assertNothingInstalled(t, dir)
}

func TestInstallNamesAnUnknownVersion(t *testing.T) {
	ver, files := releaseFiles(t)
	srv := serveRelease(t, "v"+ver, files)
	out, dir, err := install(t, srv.URL, "v9.9.9")
	require.Error(t, err, out)
	assert.Contains(t, out, srv.URL+"/v9.9.9/checksums.txt")
	assert.Contains(t, out, "is v9.9.9 a released version?")
	assertNothingInstalled(t, dir)
}

// A node without curl downloads with wget.
func TestInstallWithWgetWhenNoCurl(t *testing.T) {
	ver, files := releaseFiles(t)
	srv := serveRelease(t, "v"+ver, files)
	out, dir, err := install(t, srv.URL, "v"+ver, "PATH="+pathWithout(t, "curl"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "with wget")
	assert.FileExists(t, filepath.Join(dir, "mltrain"))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.NotEmpty(t, srv.agents)
	for _, a := range srv.agents {
		assert.Contains(t, a, "Wget", "every download went through wget")
	}
}

func TestInstallNeedsAVersion(t *testing.T) {
	out, dir, err := install(t, "http://127.0.0.1:9", "")
	require.Error(t, err)
	assert.Contains(t, out, "set MLTRAIN_VERSION")
	assertNothingInstalled(t, dir)
}

// make dist's dist/ served as is (a plain static file server, as
// `python3 -m http.server -d dist` or nginx would) is a download URL: the
// installer fetched from it installs from it, as README's Install says.
func TestInstallFromDistServedAsIs(t *testing.T) {
	dockertest.Engine(t) // a real-build test: -short skips it outside CI
	d := makeDist(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(distDir(t, d))))
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "bin")
	script := `curl -fsSL "$URL/$MLTRAIN_VERSION/install.sh" | sh`
	out, err := runIn(t, t.TempDir(), []string{"URL=" + srv.URL, "MLTRAIN_VERSION=" + d.tag,
		"MLTRAIN_DOWNLOAD_URL=" + srv.URL, "MLTRAIN_INSTALL_DIR=" + dir}, "sh", "-c", script)
	require.NoError(t, err, out)
	assert.Contains(t, out, "downloading mltrain "+d.tag+" (amd64) from "+srv.URL+"/"+d.tag)
	assert.Contains(t, out, "installed "+filepath.Join(dir, "mltrain"))
	got, err := exec.Command(filepath.Join(dir, "mltrain"), "version", "--json").Output()
	require.NoError(t, err)
	assert.Contains(t, string(got), `"version": "`+d.version+`"`)
}
