// Package dockertest gives integration tests the real engine and stand-in
// images built locally (no registry is reachable where tests run).
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
)

// TestLabel marks every object a test creates, so leftovers can be found:
// docker ps -a --filter label=mltrain.test
const TestLabel = "mltrain.test"

// Engine connects to the real engine. Where no engine exists the test is
// skipped with the reason; under CI (CI=true) an absent engine fails instead,
// because CI here is meant to run these tests. `go test -short` skips them
// outside CI, for a quick run of the unit tests (the lab's core sequence has
// unit tests on the fake engine).
func Engine(t testing.TB) *docker.SDK {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("skipping a real-engine test in -short mode; CI runs it")
	}
	eng, err := docker.Connect(context.Background())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the integration tests but the Docker engine is not reachable: %v", err)
		}
		t.Skipf("skipping: no Docker engine here (%v); CI runs this test", err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

var buildMu sync.Mutex

// GoImage compiles the Go main package pkg (an import path or ./dir) as a
// static binary and builds `FROM scratch` + that binary as image tag. files are
// added to the image root (path -> content). The image is labelled TestLabel.
func GoImage(t testing.TB, eng docker.Engine, tag, pkg string, files map[string]string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile stand-in %s: %v\n%s", pkg, err, out)
	}
	binBytes, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	df := "FROM scratch\nCOPY app /app\n"
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	ctxFiles := map[string][]byte{"app": binBytes}
	for i, n := range names {
		src := fmt.Sprintf("f%d", i)
		ctxFiles[src] = []byte(files[n])
		df += fmt.Sprintf("COPY %s %s\n", src, n)
	}
	df += "ENTRYPOINT [\"/app\"]\n"
	ctxFiles["Dockerfile"] = []byte(df)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := eng.ImageBuild(ctx, docker.BuildOptions{
		Context: TarOf(ctxFiles), Tags: []string{tag}, Labels: map[string]string{TestLabel: "1"},
	}); err != nil {
		t.Fatalf("build stand-in image %s: %v", tag, err)
	}
	return tag
}

// TarOf makes an in-memory tar of files (path -> content), mode 0755 so
// binaries stay executable.
func TarOf(files map[string][]byte) *bytes.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write(files[n])
	}
	_ = tw.Close()
	return bytes.NewReader(buf.Bytes())
}

// UniqueName returns a name for test objects that does not collide across
// parallel test runs: prefix-<test name>-<pid>.
func UniqueName(t testing.TB, prefix string) string {
	n := strings.ToLower(t.Name())
	n = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(n)
	if len(n) > 30 {
		n = n[len(n)-30:]
	}
	return fmt.Sprintf("%s-%s-%d", prefix, strings.Trim(n, "-"), os.Getpid())
}
