package labtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
)

func TestFreePortsAreDistinctReservedAndBelowTheEphemeralRange(t *testing.T) {
	ports := FreePorts(t, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
		assert.True(t, p >= portLow && p < portHigh, "port %d outside %d-%d", p, portLow, portHigh)
		assert.False(t, reserve(t, "port-"+strconv.Itoa(p)), "port %d must be held for this test", p)
	}
}

func TestAReservationIsExclusiveUntilItsTestEnds(t *testing.T) {
	name := "probe-" + strconv.Itoa(os.Getpid())
	t.Run("holder", func(t *testing.T) {
		require.True(t, reserve(t, name))
		assert.False(t, reserve(t, name), "a second reservation of a held name")
	})
	assert.True(t, reserve(t, name), "the holder's end frees the name")
}

func TestAPortInUseIsSkipped(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer l.Close()
	assert.False(t, portFree(l.Addr().(*net.TCPAddr).Port))
}

func TestFreeRayPortBaseReservesEverySlotsBlock(t *testing.T) {
	base := FreeRayPortBase(t, 3)
	for s := 0; s < 3; s++ {
		p := plan.NodePorts(base, s)
		assert.FileExists(t, filepath.Join(os.TempDir(), "mltrain-test-ports", "ray-"+strconv.Itoa(p.NodeManager)))
		assert.Less(t, p.MaxWorker, 32768, "slot %d reaches the ephemeral range", s)
	}
	assert.NotEqual(t, base, FreeRayPortBase(t, 1), "a held block is not handed out again")
}
