// Package labtest builds the images that let tests run a whole lab on an
// engine with no registry: FROM-scratch stand-ins for Ray, Grafana,
// Prometheus and Jupyter (testdata/standin), and a REAL MinIO server compiled
// from its Go module (cached, since it takes minutes), also run as a plain
// process (StartMinIO) for tests of what MinIO allows. Test support only.
package labtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
)

// MinIOModule is the MinIO server version tests run (pinned: the module
// proxy serves no @latest listing here).
const MinIOModule = "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// MinIOBinary returns the path of a static MinIO server binary, built once
// into the test cache (dockertest.CachedBinary: locked, renamed into place).
func MinIOBinary(t testing.TB) string {
	t.Helper()
	ver := MinIOModule[strings.LastIndex(MinIOModule, "-")+1:]
	return dockertest.CachedBinary(t, filepath.Join("minio-"+ver, "minio"), "minio", func(dst string) error {
		t.Logf("building the MinIO server from %s (once)", MinIOModule)
		gobin, err := os.MkdirTemp(filepath.Dir(dst), "gobin")
		if err != nil {
			return err
		}
		defer os.RemoveAll(gobin)
		cmd := exec.Command("go", "install", MinIOModule)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+gobin, "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install %s: %w\n%s", MinIOModule, err, out)
		}
		return os.Rename(filepath.Join(gobin, "minio"), dst)
	})
}

// Images are the stand-in image tags by role name (head, worker, jupyter,
// minio, prometheus, grafana — the service.Role strings).
type Images map[string]string

var (
	buildOnce sync.Mutex
	built     Images
)

// BuildImages builds (once per test process) every role's image.
func BuildImages(t testing.TB, eng docker.Engine) Images {
	t.Helper()
	buildOnce.Lock()
	defer buildOnce.Unlock()
	if built != nil {
		return built
	}
	_, self, _, _ := runtime.Caller(0)
	standin := compile(t, filepath.Join(filepath.Dir(self), "testdata", "standin"))
	// The healthcheck tools the real images ship, answered by the stand-in.
	tools := []string{"/usr/local/bin/ray", "/usr/bin/wget", "/usr/bin/curl", "/usr/bin/mc", "/usr/bin/python", "/usr/bin/python3"}
	imgs := Images{}
	// Tagged by content: test processes of different checkouts sharing one
	// engine never retag each other's images under a running lab.
	sum := sha256.Sum256(standin)
	ver := hex.EncodeToString(sum[:6])
	for _, role := range []string{"ray", "grafana", "prometheus", "jupyter"} {
		tag := "mltrain-test/standin-" + role + ":" + ver
		files := map[string][]byte{"/app": standin, "/standin-role": []byte(role)}
		for _, p := range tools {
			files[p] = standin
		}
		tail := `ENTRYPOINT ["/app"]`
		if role == "ray" {
			// The version labels mltrain's own Ray images carry: a join
			// compares them with the lab's.
			tail += fmt.Sprintf("\nLABEL %s=%q %s=%q", labels.ImageRayVersion, dockerfiles.DefaultRayVersion, labels.ImagePythonVersion, dockerfiles.PythonVersion)
		}
		build(t, eng, tag, files, tail)
		imgs[role] = tag
	}
	imgs["head"], imgs["worker"] = imgs["ray"], imgs["ray"]
	delete(imgs, "ray")

	minio, err := os.ReadFile(MinIOBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	// The real MinIO image's entrypoint runs `minio <command>`; healthcheck
	// tools (mc ready local) are answered by the stand-in.
	files := map[string][]byte{"/usr/bin/minio": minio, "/standin-role": []byte("minio"), "/tmp/.keep": nil}
	for _, p := range tools {
		files[p] = standin
	}
	build(t, eng, "mltrain-test/minio:"+ver, files, `ENTRYPOINT ["/usr/bin/minio"]`+"\n"+`ENV MINIO_CI_CD=1`)
	imgs["minio"] = "mltrain-test/minio:" + ver
	built = imgs
	return imgs
}

func compile(t testing.TB, pkgDir string) []byte {
	dir := t.TempDir()
	out := filepath.Join(dir, "standin")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile stand-in: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// build makes a FROM-scratch image holding files (absolute paths), skipping
// the build when an image with the same content label exists.
func build(t testing.TB, eng docker.Engine, tag string, files map[string][]byte, tail string) {
	var ctxBuf bytes.Buffer
	tw := tar.NewWriter(&ctxBuf)
	df := "FROM scratch\nCOPY rootfs/ /\n" + tail + "\n"
	_ = tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	_, _ = tw.Write([]byte(df))
	for p, b := range files {
		_ = tw.WriteHeader(&tar.Header{Name: "rootfs" + p, Mode: 0o755, Size: int64(len(b)), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write(b)
	}
	_ = tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := eng.ImageBuild(ctx, docker.BuildOptions{
		Context: bytes.NewReader(ctxBuf.Bytes()), Tags: []string{tag}, Labels: map[string]string{dockertest.TestLabel: "1"},
	}); err != nil {
		t.Fatalf("build test image %s: %v", tag, err)
	}
}
