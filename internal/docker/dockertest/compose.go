package dockertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ComposeModule is the Docker Compose that tests and benchmarks run, built
// from its Go module. v5.6.0 is the newest whose go.mod this repository's Go
// (1.26.8) satisfies: v5.7.0 requires go >= 1.26.10. .ci/run reads this line.
const ComposeModule = "github.com/docker/compose/v5@v5.6.0"

// ComposeV5 returns the path of a Docker Compose v5 binary, building it into
// the test cache on first use (a few minutes; .ci/run does it up front).
func ComposeV5(t testing.TB) string {
	t.Helper()
	mod, ver, _ := strings.Cut(ComposeModule, "@")
	rel := filepath.Join("compose-"+ver, "docker-compose")
	return CachedBinary(t, rel, "compose", func(tmp string) error {
		t.Logf("building Docker Compose %s for the tests into %s (once)", ver, filepath.Join(CacheDir(), rel))
		return buildModule(mod, ver, "./cmd", "-w -X "+mod+"/internal.Version="+ver, tmp)
	})
}

// buildModule builds the package pkg of module mod@ver into dst, in a
// writable copy of its downloaded source: `go install mod@ver` refuses a
// module whose go.mod has exclude or replace directives, as compose's has.
func buildModule(mod, ver, pkg, ldflags, dst string) error {
	out, err := goCmd("", "mod", "download", "-json", mod+"@"+ver).Output()
	if err != nil {
		return fmt.Errorf("download %s@%s: %w\n%s", mod, ver, err, out)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return fmt.Errorf("download %s@%s: %v %s", mod, ver, err, m.Error)
	}
	src, err := os.MkdirTemp(filepath.Dir(dst), "src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := os.CopyFS(src, os.DirFS(m.Dir)); err != nil {
		return fmt.Errorf("copy the %s source: %w", mod, err)
	}
	cmd := goCmd(src, "build", "-trimpath", "-ldflags", ldflags, "-o", dst, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s@%s: %w\n%s", mod, ver, err, out)
	}
	return nil
}

func goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off", "GOTOOLCHAIN=local")
	return cmd
}

// CacheDir is where tools that tests build from source are kept across
// runs: $MLTRAIN_TEST_CACHE, else ~/.cache/mltrain-test.
func CacheDir() string {
	if d := os.Getenv("MLTRAIN_TEST_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "mltrain-test")
}

// CachedBinary returns CacheDir()/rel, calling build(path) first when it is
// absent. A file lock (CacheDir()/<lock>.lock) makes parallel test
// processes build it once; build writes to a temporary path renamed into
// place, so an interrupted build leaves nothing that looks finished.
func CachedBinary(t testing.TB, rel, lock string, build func(dst string) error) string {
	t.Helper()
	bin := filepath.Join(CacheDir(), rel)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(CacheDir(), lock+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin // built by another process while this one waited
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	defer os.Remove(tmp)
	t0 := time.Now()
	if err := build(tmp); err != nil {
		t.Fatalf("build %s: %v", bin, err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s", bin, time.Since(t0).Round(time.Second))
	return bin
}

// Compose runs the compose binary with args and returns its combined output.
func Compose(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
