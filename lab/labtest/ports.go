package labtest

import (
	"strconv"
	"testing"

	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/lab/plan"
)

// Ray nodes' port blocks, above the single test ports (portstest) and
// below the kernel's ephemeral range.
const rayBaseLow, rayBaseHigh = 20000, 32000

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
		if !portstest.Reserve(t, "ray-"+strconv.Itoa(p.NodeManager)) {
			return false
		}
		for _, port := range []int{p.NodeManager, p.ObjectManager, p.AgentGRPC, p.AgentHTTP, p.RuntimeEnvAgent, p.Metrics, p.ClientServer, p.MinWorker, p.MaxWorker} {
			if port != 0 && !portstest.Free(port) {
				return false
			}
		}
	}
	return true
}
