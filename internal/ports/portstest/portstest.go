// Package portstest hands tests free TCP ports, below the kernel's
// ephemeral range and reserved against every other test process.
package portstest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Test ports live below the kernel's ephemeral range (Linux: 32768 and up).
// A port taken from listen(":0") and closed again is handed to the next
// outgoing connection or Docker's own pick in any process, so a lab test
// could lose it between the pick and its container's bind (CI saw exactly
// that). Below the range only tests pick, and `go test ./...` runs packages
// as parallel processes, so each pick is also reserved in a lock file.
const (
	Low, High        = 10000, 20000 // single ports (FreePorts)
	staleReservation = 2 * time.Hour
)

// FreePorts returns n distinct TCP ports free on every address of this
// machine, reserved against every other test process until the test ends.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == High-Low {
			t.Fatalf("no free test port between %d and %d after %d tries", Low, High, tries)
		}
		p := Low + rand.IntN(High-Low)
		// A port reserved here but used by something else stays reserved.
		if Reserve(t, "port-"+strconv.Itoa(p)) && Free(p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// Reserve takes the lock file name until the test ends; false when another
// test holds it. A killed run's files are cleared once stale.
func Reserve(t testing.TB, name string) bool {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "mltrain-test-ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("test port reservations: %v", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if st, serr := os.Stat(path); serr == nil && time.Since(st.ModTime()) > staleReservation {
			_ = os.Remove(path)
		}
		return false
	}
	if err != nil {
		t.Fatalf("reserve test port %s: %v", path, err)
	}
	_, _ = fmt.Fprintf(f, "%d %s\n", os.Getpid(), t.Name())
	_ = f.Close()
	t.Cleanup(func() { _ = os.Remove(path) })
	return true
}

// Free says whether port can be listened on at every address.
func Free(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Hangup listens on loopback and closes every connection it takes at once:
// a port where something answers but speaks no protocol (a registry's
// reachability, an SSH handshake cut short). It returns the address.
func Hangup(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}
