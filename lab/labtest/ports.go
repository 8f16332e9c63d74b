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

	"github.com/mltrain/mltrain/lab/plan"
)

// Test ports live below the kernel's ephemeral range (Linux: 32768 and up).
// A port taken from listen(":0") and closed again is handed to the next
// outgoing connection or Docker's own pick in any process, so a lab test
// could lose it between the pick and its container's bind (CI saw exactly
// that). Below the range only tests pick, and `go test ./...` runs packages
// as parallel processes, so each pick is also reserved in a lock file.
const (
	portLow, portHigh       = 10000, 20000 // single ports
	rayBaseLow, rayBaseHigh = 20000, 32000 // Ray nodes' port blocks
	staleReservation        = 2 * time.Hour
)

// FreePorts returns n distinct TCP ports free on every address of this
// machine, reserved against every other test process until the test ends.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == portHigh-portLow {
			t.Fatalf("no free test port between %d and %d after %d tries", portLow, portHigh, tries)
		}
		p := portLow + rand.IntN(portHigh-portLow)
		// A port reserved here but used by something else stays reserved.
		if reserve(t, "port-"+strconv.Itoa(p)) && portFree(p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// FreeRayPortBase finds a Ray port base whose first slots' blocks are free
// (plan.NodePorts lays them out) and reserves them until the test ends.
func FreeRayPortBase(t testing.TB, slots int) int {
	t.Helper()
	span := plan.NodePorts(0, 1).NodeManager // one slot's block
	for base := rayBaseLow; base+span*slots <= rayBaseHigh; base += span {
		if rayBlocksFree(t, base, slots) {
			return base
		}
	}
	t.Fatalf("no %d free blocks of Ray ports between %d and %d", slots, rayBaseLow, rayBaseHigh)
	return 0
}

// rayBlocksFree reserves base's slots one by one and checks their ports; a
// block reserved before a later one proved taken stays reserved, harmlessly.
func rayBlocksFree(t testing.TB, base, slots int) bool {
	for s := 0; s < slots; s++ {
		p := plan.NodePorts(base, s)
		if !reserve(t, "ray-"+strconv.Itoa(p.NodeManager)) {
			return false
		}
		for _, port := range []int{p.NodeManager, p.ObjectManager, p.AgentGRPC, p.AgentHTTP, p.RuntimeEnvAgent, p.Metrics, p.ClientServer, p.MinWorker, p.MaxWorker} {
			if port != 0 && !portFree(port) {
				return false
			}
		}
	}
	return true
}

// reserve takes the lock file name until the test ends; false when another
// test holds it. A killed run's files are cleared once stale.
func reserve(t testing.TB, name string) bool {
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

// portFree says whether port can be listened on at every address.
func portFree(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
