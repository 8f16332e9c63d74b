package labtest

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
	portLow, portHigh         = 10000, 20000 // single ports
	rayBaseLow, rayBaseHigh   = 20000, 32000 // blocks of Ray node ports
	rayBlock                  = 1000
	staleReservation          = 2 * time.Hour // a killed run's lock files
	reservationDirName        = "mltrain-test-ports"
	maxPortTries              = 2000
	reservationFilePermission = 0o600
)

// FreePorts returns n distinct TCP ports free on every address of this
// machine, reserved for the test against every other test process until it
// ends.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == maxPortTries {
			t.Fatalf("no free test port between %d and %d after %d tries", portLow, portHigh, tries)
		}
		p := portLow + rand.IntN(portHigh-portLow)
		if !reserve(t, "port-"+strconv.Itoa(p)) {
			continue
		}
		if !portFree("", p) {
			continue // reserved by us, used by something else: keep it reserved
		}
		ports = append(ports, p)
	}
	return ports
}

// reserve takes the lock file name for the rest of the test; false when
// another test holds it.
func reserve(t testing.TB, name string) bool {
	t.Helper()
	dir := filepath.Join(os.TempDir(), reservationDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("test port reservations: %v", err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, reservationFilePermission)
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

// portFree says whether port can be listened on at ip ("" is every address).
func portFree(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
