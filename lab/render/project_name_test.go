package render

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// dnsLabel is one DNS label (RFC 1035/1123): what the engine's DNS can serve
// a container name as.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// The longest --project renders a lab whose every derived name is legal:
// container names are DNS labels (even for worker 999), volume and network
// names fit a path component, and compose-go loads it under that name.
func TestLongestProjectKeepsDerivedNamesLegal(t *testing.T) {
	name := "lab-" + strings.Repeat("x", service.MaxProjectLen-4)
	require.NoError(t, service.CheckProject(name))
	assert.Len(t, service.ContainerName(name, "ray-worker-999"), 63)
	assert.Regexp(t, dnsLabel, service.ContainerName(name, "ray-worker-999"))

	p, err := plan.New(planFacts(nvidiaGPUs(8)), plan.Options{Project: name}, fixedCreds)
	require.NoError(t, err)
	dir := state.Dir(t.TempDir())
	r, err := Render(context.Background(), dir, p)
	require.NoError(t, err)
	assert.Equal(t, name, r.Project.Name)
	for _, s := range r.Project.Services {
		assert.Regexp(t, dnsLabel, s.ContainerName, s.Name)
	}
	for key, v := range r.Project.Volumes {
		engineName := v.Name
		if engineName == "" {
			engineName = name + "_" + key
		}
		assert.LessOrEqual(t, len(engineName), 255, key)
	}
	assert.LessOrEqual(t, len(state.DefaultDir(name).Path()), 4096)
	_, err = compose.Load(context.Background(), dir.Path())
	require.NoError(t, err)
}

func planFacts(gpus []gpu.GPU) host.Facts {
	return host.Facts{GPUs: gpu.Report{GPUs: gpus}, CPUs: 64, MemoryBytes: 256 << 30, HostIP: "10.1.2.3"}
}
