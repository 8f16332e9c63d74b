package labtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// RehearsalFacts are a GPU-less host's facts: the lab plans a CPU rehearsal.
func RehearsalFacts() host.Facts {
	return host.Facts{CPUs: 4, MemoryBytes: 8 << 30, HostIP: "127.0.0.1"}
}

// LabOptions are the options of a stand-in lab named after the test: every
// role's image a stand-in (real MinIO), every port a free loopback one, its
// own dataset volume. The lab's containers and volumes are removed when the
// test ends.
func LabOptions(t testing.TB, eng docker.Engine, prefix string) plan.Options {
	t.Helper()
	imgs := BuildImages(t, eng)
	project := strings.ReplaceAll(dockertest.UniqueName(t, prefix), "_", "-")
	o := plan.Options{Project: project, Bind: "127.0.0.1", DataVolume: project + "-food11",
		Images: map[service.Role]string{}, Ports: map[string]int{}}
	for _, r := range service.Roles() {
		o.Images[r] = imgs[string(r)]
	}
	names := []string{service.PortDashboard, service.PortGrafana, service.PortJupyter, service.PortMinIOConsole, service.PortMinIOAPI, service.PortPrometheus}
	for i, p := range portstest.FreePorts(t, len(names)) {
		o.Ports[names[i]] = p
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = compose.Down(ctx, eng, project, time.Second, true, nil)
		_ = eng.VolumeRemove(ctx, o.DataVolume)
	})
	return o
}
