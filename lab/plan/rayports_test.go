package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Several nodes on one host network: no port of one node may be another's.
func TestNodePortsNeverOverlap(t *testing.T) {
	seen := map[int]int{}
	for slot := 0; slot < 9; slot++ {
		p := NodePorts(DefaultRayPortBase, slot)
		ports := []int{p.NodeManager, p.ObjectManager, p.AgentGRPC, p.AgentHTTP, p.RuntimeEnvAgent, p.Metrics}
		if p.ClientServer > 0 {
			ports = append(ports, p.ClientServer)
		}
		for w := p.MinWorker; w <= p.MaxWorker; w++ {
			ports = append(ports, w)
		}
		for _, port := range ports {
			prev, dup := seen[port]
			require.False(t, dup, "port %d of slot %d is slot %d's", port, slot, prev)
			seen[port] = slot
		}
		lo, hi := p.Range()
		assert.Less(t, hi, 32768, "below the ephemeral range")
		assert.GreaterOrEqual(t, p.MaxWorker-p.MinWorker, 800, "room for a node's worker processes")
		assert.Equal(t, lo, p.NodeManager)
	}
	assert.Contains(t, NodePorts(20000, 1).Flags(), "--dashboard-agent-listen-port=21003")
	assert.NotContains(t, NodePorts(20000, 1).Flags(), "--ray-client-server-port=21006", "only the head runs the client server")
	assert.Contains(t, NodePorts(20000, 0).Flags(), "--ray-client-server-port=20006")
}

func TestRayPortBaseBounds(t *testing.T) {
	assert.NoError(t, checkRayPortBase(20000, 3))
	assert.Error(t, checkRayPortBase(30000, 3), "would cross 32768")
	assert.Error(t, checkRayPortBase(80, 1))
	assert.Error(t, checkRayPortBase(1024, 13))
}
