package dockertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mltrain/mltrain/internal/docker"
)

// RegistryModule is the container registry tests and benchmarks push to and
// pull from: the CNCF Distribution registry, built from its Go module.
// v3.1.2 is the newest release (go 1.26.0 in its go.mod). .ci/run reads this
// line.
const RegistryModule = "github.com/distribution/distribution/v3@v3.1.2"

// RegistryBinary returns the path of the registry binary, building it into
// the test cache on first use (a few minutes; .ci/run does it up front).
func RegistryBinary(t testing.TB) string {
	t.Helper()
	mod, ver, _ := strings.Cut(RegistryModule, "@")
	rel := filepath.Join("registry-"+ver, "registry")
	return CachedBinary(t, rel, "registry", func(tmp string) error {
		t.Logf("building the Distribution registry %s for the tests into %s (once)", ver, filepath.Join(CacheDir(), rel))
		return buildModule(mod, ver, "./cmd/registry", "-s -w -X "+mod+"/version.version="+ver, tmp)
	})
}

// Registry is a Distribution registry on a loopback port. The engine treats
// registries on 127.0.0.0/8 as insecure-allowed, so it pulls and pushes over
// plain HTTP with no daemon configuration.
type Registry struct {
	t      testing.TB
	bin    string
	dir    string     // config, storage and log
	Addr   string     // 127.0.0.1:port, the same across restarts
	mu     sync.Mutex // Kill may come from another goroutine (a test's saboteur)
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartRegistry runs a registry with its storage in a test temp dir; it is
// killed when the test ends.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{t: t, bin: RegistryBinary(t), dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(r.dir, "storage"), r.Addr)
	if err := os.WriteFile(filepath.Join(r.dir, "config.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Start (re)starts the registry on its address and storage and waits until
// it answers /v2/.
func (r *Registry) Start() {
	r.t.Helper()
	logf, err := os.OpenFile(filepath.Join(r.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(r.bin, "serve", filepath.Join(r.dir, "config.yml"))
	// No trace exporter: nothing outside this host is reachable.
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start the registry: %v", err)
	}
	exited := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			r.t.Fatalf("the registry exited at start:\n%s", r.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the registry did not answer on %s within 30s (%v):\n%s", r.Addr, err, r.Log())
		}
	}
}

// Kill ends the registry at once (SIGKILL), as a crash or a cut link would,
// and waits for it to be gone.
func (r *Registry) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
	r.cmd = nil
}

// Log is what the registry wrote.
func (r *Registry) Log() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "log"))
	return string(b)
}

// Ref is repo:tag in this registry.
func (r *Registry) Ref(repoTag string) string { return r.Addr + "/" + repoTag }

// Push tags the local image src as dst (a reference in a registry) and
// pushes it there through the engine.
func Push(t testing.TB, src, dst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := rawClient(t)
	if _, err := c.ImageTag(ctx, client.ImageTagOptions{Source: src, Target: dst}); err != nil {
		t.Fatalf("tag %s as %s: %v", src, dst, err)
	}
	// The engine wants an X-Registry-Auth header on a push, even an empty one.
	resp, err := c.ImagePush(ctx, dst, client.ImagePushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		t.Fatalf("push %s: %v", dst, err)
	}
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			t.Fatalf("push %s: %v", dst, err)
		}
		if m.Error != nil {
			t.Fatalf("push %s: %s", dst, m.Error.Message)
		}
	}
}

// rawClient is a moby client for what docker.Engine does not offer (tag,
// push), connected like docker.Connect.
func rawClient(t testing.TB) *client.Client {
	t.Helper()
	host, err := docker.ResolveHost()
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("ping the engine: %v", err)
	}
	return c
}
