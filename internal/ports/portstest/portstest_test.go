package portstest

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreePortsAreDistinctReservedAndBelowTheEphemeralRange(t *testing.T) {
	ports := FreePorts(t, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d given twice", p)
		seen[p] = true
		assert.True(t, p >= Low && p < High, "port %d outside %d-%d", p, Low, High)
		assert.False(t, Reserve(t, "port-"+strconv.Itoa(p)), "port %d must be held for this test", p)
	}
}

func TestAReservationIsExclusiveUntilItsTestEnds(t *testing.T) {
	name := "probe-" + strconv.Itoa(os.Getpid())
	t.Run("holder", func(t *testing.T) {
		require.True(t, Reserve(t, name))
		assert.False(t, Reserve(t, name), "a second reservation of a held name")
	})
	assert.True(t, Reserve(t, name), "the holder's end frees the name")
}

func TestAPortInUseIsSkipped(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer l.Close()
	assert.False(t, Free(l.Addr().(*net.TCPAddr).Port))
}
