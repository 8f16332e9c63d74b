package render

import (
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the host network the nodes of a host share its address, and Ray hands a
// driver any of them: every Ray node of a host sees the others' sockets
// (one ray-tmp volume, writable, as root) and they start one at a time.
func TestHostNodesShareOneRayTmpAndStartInTurn(t *testing.T) {
	for name, nodes := range map[string][]string{
		"nvidia-2gpu-allow-join": {service.HeadService, service.WorkerService(0), service.WorkerService(1)},
		"join-nvidia-1gpu":       {service.WorkerService(0)},
	} {
		proj := render(t, caseNamed(name))
		for i, svc := range nodes {
			s, err := proj.GetService(svc)
			require.NoError(t, err, name)
			assert.Equal(t, "host", s.NetworkMode, "%s %s", name, svc)
			assert.Equal(t, "0", s.User, "%s %s", name, svc)
			assert.True(t, mounts(s, VolumeRayTmp, rayTmp), "%s %s mounts ray-tmp read-write at %s: %+v", name, svc, rayTmp, s.Volumes)
			if i > 0 {
				dep, ok := s.DependsOn[nodes[i-1]]
				assert.True(t, ok, "%s: %s starts after %s", name, svc, nodes[i-1])
				assert.Equal(t, types.ServiceConditionHealthy, dep.Condition, "%s %s", name, svc)
			}
		}
		_, ok := proj.Volumes[VolumeRayTmp]
		assert.True(t, ok, "%s declares ray-tmp", name)
	}
	// On a lab's own network each node has its own address: workers keep
	// their own temp dirs and start together.
	proj := render(t, caseNamed("nvidia-4gpu-workers-2"))
	w1, err := proj.GetService(service.WorkerService(1))
	require.NoError(t, err)
	assert.False(t, mounts(w1, VolumeRayTmp, rayTmp))
	assert.NotContains(t, w1.DependsOn, service.WorkerService(0))
}

func mounts(s types.ServiceConfig, source, target string) bool {
	for _, v := range s.Volumes {
		if v.Source == source && v.Target == target && !v.ReadOnly {
			return true
		}
	}
	return false
}
