package release

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ubuntu 22.04's glibc: the oldest the lab nodes run.
const nodeGLIBC = "2.35"

// A lab node with Docker and no Go: make build compiles a cgo binary in the
// (stand-in) Go image, says so, and hands the binary to the invoking user. A
// Go older than go.mod's goes the same way, and reuses the cache volume.
func TestMakeBuildWithoutGo(t *testing.T) {
	image := GoStandinImage(t)
	src := copyCheckout(t)
	volume := fmt.Sprintf("mltrain-test-gocache-%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", "-f", volume).Run() })
	uid, gid := asUser(t, src)

	noGo := pathWithout(t, "go", "gofmt")
	build := func(path, ver string) string {
		args := uid.wrap([]string{"make", "build", "GO_IMAGE=" + image, "GO_CACHE_VOLUME=" + volume, "VERSION=" + ver, "COMMIT=abc1234"})
		out, err := runIn(t, src, []string{"PATH=" + path, "HOME=" + src}, args[0], args[1:]...)
		require.NoError(t, err, out)
		return out
	}

	out := build(noGo, "v0.0.0-nogo")
	assert.Contains(t, out, "building bin/mltrain in Docker image "+image+" (no Go on PATH), cgo on, caches in volume "+volume)
	checkBinary(t, filepath.Join(src, "bin/mltrain"), "v0.0.0-nogo", uid.id, gid)

	// A Go 1.22 (Ubuntu 24.04's) on PATH is too old for go.mod: the image again.
	old := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(old, "go"), []byte("#!/bin/sh\n[ \"$1 $2\" = 'env GOVERSION' ] && echo go1.22.2 && exit 0\necho 'go: this old Go must not build' >&2; exit 3\n"), 0o755))
	require.NoError(t, os.Chmod(old, 0o755))
	out = build(old+":"+noGo, "v0.0.0-oldgo")
	assert.Contains(t, out, "in Docker image "+image+" (the host's Go 1.22.2 is older than go.mod's 1.26")
	checkBinary(t, filepath.Join(src, "bin/mltrain"), "v0.0.0-oldgo", uid.id, gid)

	// The caches live in the named volume, not in the container.
	cached, err := exec.Command("docker", "run", "--rm", "-v", volume+":/cache", image, "sh", "-c", "ls /cache/build /cache/mod | wc -l").CombinedOutput()
	require.NoError(t, err, string(cached))
	n, _ := strconv.Atoi(strings.TrimSpace(string(cached)))
	assert.Greater(t, n, 100, "build and module caches in volume %s", volume)
}

// checkBinary runs bin's version --json and checks what the build stamped,
// that cgo was on, that the invoking user owns it, and that it runs on the
// oldest glibc of the lab nodes.
func checkBinary(t *testing.T, bin, ver string, uid, gid int) {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").CombinedOutput()
	require.NoError(t, err, string(out))
	var v struct {
		Version, Commit string
		NVML            bool
	}
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	assert.Equal(t, ver, v.Version)
	assert.NotEmpty(t, v.Commit)
	assert.True(t, v.NVML, "built with cgo: NVML compiled in")
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	assert.Equal(t, [2]int{uid, gid}, [2]int{int(st.Uid), int(st.Gid)}, "%s is the invoking user's", bin)
	g := maxGLIBC(t, bin)
	assert.False(t, versionLess(nodeGLIBC, g), "%s needs GLIBC_%s; Ubuntu 22.04 has %s", bin, g, nodeGLIBC)
}

// user is who runs make: root's tests run it as nobody (with the docker
// socket's group), so the binary's owner shows it was handed over.
type user struct{ id, gid, sock int }

func (u user) wrap(args []string) []string {
	if u.id == os.Getuid() {
		return args
	}
	return append([]string{"setpriv", "--reuid", strconv.Itoa(u.id), "--regid", strconv.Itoa(u.gid),
		"--groups", strconv.Itoa(u.sock), "--"}, args...)
}

// asUser picks the user and makes dir theirs.
func asUser(t *testing.T, dir string) (user, int) {
	t.Helper()
	if os.Getuid() != 0 {
		return user{id: os.Getuid(), gid: os.Getgid()}, os.Getgid()
	}
	fi, err := os.Stat("/var/run/docker.sock")
	require.NoError(t, err, "the engine's socket, for nobody to reach it")
	u := user{id: 65534, gid: 65534, sock: int(fi.Sys().(*syscall.Stat_t).Gid)}
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.id, u.gid)
	}))
	for d := filepath.Dir(dir); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755)) // t.TempDir's parents are 0700
	}
	return u, u.gid
}

// A node without Go and without the Go image (none pulled: no registry, or
// no such image): build.sh ends on what to do next, not on Docker's error.
func TestBuildWithoutGoOrGoImageNamesTheNextSteps(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no docker CLI on PATH (.ci/run installs docker.io)")
		}
		t.Skip("no docker")
	}
	image := "mltrain-test/no-such-go-image:0"
	require.Error(t, exec.Command("docker", "image", "inspect", image).Run(), "%s must not exist locally", image)
	src := copyCheckout(t)
	out, err := runIn(t, src, []string{"PATH=" + pathWithout(t, "go", "gofmt"), "GO_IMAGE=" + image}, "sh", "scripts/build.sh")
	require.Error(t, err, out)
	assert.Contains(t, out, "cannot build mltrain: no Go on PATH, and the Go image "+image+" is not on this host and could not be pulled")
	assert.Contains(t, out, "install Go >= ")
	assert.Contains(t, out, "'docker save "+image+" -o go-image.tar'")
	assert.Contains(t, out, "'docker load -i go-image.tar'")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Contains(t, lines[len(lines)-1], "install.sh", "the next steps end the output:\n%s", out)
	_, err = os.Stat(filepath.Join(src, "bin", "mltrain"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing built")
}
