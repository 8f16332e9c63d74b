package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/service"
)

// MinIO's API is published only where a joined host needs it: on loopback
// for a one-host lab (mltrain reaches it from this host; the containers on
// the lab's network), on --bind only for a lab that accepts other hosts'
// workers, which write their checkpoints there as the lab user. Its
// console, a browser page behind the root login, stays on --bind.
func TestMinIOAPIIsPublishedOnlyWhereAJoinedHostNeedsIt(t *testing.T) {
	for name, want := range map[string]string{
		"nvidia-2gpu":            "127.0.0.1",
		"amd-2gpu":               "127.0.0.1",
		"nvidia-1gpu-shared":     "127.0.0.1",
		"nvidia-4gpu-workers-2":  "127.0.0.1",
		"nvidia-2gpu-allow-join": "0.0.0.0",
	} {
		proj := render(t, caseNamed(name))
		s, err := proj.GetService(service.MinIOService)
		require.NoError(t, err)
		api := map[uint32]string{}
		for _, p := range s.Ports {
			api[p.Target] = p.HostIP
		}
		assert.Equal(t, want, api[9000], "%s: MinIO's API", name)
		assert.Equal(t, "0.0.0.0", api[9001], "%s: MinIO's console", name)
	}
}
