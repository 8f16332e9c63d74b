package labtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/ports/portstest"
)

// MinIOServer is a real MinIO server (MinIOModule) running as a process of
// the test on 127.0.0.1: the S3 and admin APIs without an engine, for tests
// of what MinIO itself allows.
type MinIOServer struct {
	URL          string // http://127.0.0.1:PORT
	RootUser     string // generated per server
	RootPassword string
}

// lockedBuffer collects the server's output for a failure message.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartMinIO starts a MinIO server on a fresh data directory with random
// root credentials, waits until it is ready, and stops it when the test ends.
func StartMinIO(t testing.TB) MinIOServer {
	t.Helper()
	bin := MinIOBinary(t)
	ports := portstest.FreePorts(t, 2)
	s := MinIOServer{URL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), RootUser: "root" + randomHex(t, 8), RootPassword: randomHex(t, 20)}
	cmd := exec.Command(bin, "server", t.TempDir(), "--address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+s.RootUser, "MINIO_ROOT_PASSWORD="+s.RootPassword,
		"MINIO_CI_CD=1", "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start MinIO %s: %v", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/minio/health/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("MinIO exited before it was ready: %v\n%s", waitErr, out.String())
		case <-ctx.Done():
			t.Fatalf("MinIO at %s not ready after 2 minutes:\n%s", s.URL, out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
