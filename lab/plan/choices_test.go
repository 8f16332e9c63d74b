package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/lab/service"
)

func TestChoicesOverKeepWhatTheUserDidNotName(t *testing.T) {
	prev := Choices{Options: Options{Project: "lab2", Bind: "10.0.0.5", DataVolume: "food11-b", WorkerCPUs: 6,
		Images: map[service.Role]string{service.RoleWorker: "site/ray:1", service.RoleMinIO: "site/minio:1"},
		Ports:  map[string]int{service.PortDashboard: 18265, service.PortJupyter: 18888}}.WithDefaults(), HostIP: "lab.example"}
	given := func(names ...string) Given {
		return func(f string) bool {
			for _, n := range names {
				if n == f {
					return true
				}
			}
			return false
		}
	}
	// A bare re-run: the flags' defaults, none given.
	bare := Choices{Options: Options{Project: "lab2"}.WithDefaults()}
	got := bare.Over(prev, given())
	assert.Equal(t, prev, got, "nothing named, nothing moves")
	assert.Empty(t, got.Changes(prev))

	// A flag changes only what it names; a map flag only its keys.
	next := Choices{Options: Options{Project: "lab2", Images: map[service.Role]string{service.RoleWorker: "site/ray:2"},
		Ports: map[string]int{service.PortDashboard: 28265}}.WithDefaults()}
	got = next.Over(prev, given("image-worker", "port"))
	assert.Equal(t, "site/ray:2", got.Options.Images[service.RoleWorker])
	assert.Equal(t, "site/minio:1", got.Options.Images[service.RoleMinIO])
	assert.Equal(t, map[string]int{service.PortDashboard: 28265, service.PortJupyter: 18888}, got.Options.Ports)
	assert.Equal(t, "10.0.0.5", got.Options.Bind)
	assert.Equal(t, 6, got.Options.WorkerCPUs)
	assert.Equal(t, "lab.example", got.HostIP)
	assert.Equal(t, []string{"worker image: site/ray:1 → site/ray:2", "port dashboard: 18265 → 28265"}, got.Changes(prev))
	assert.Equal(t, map[string]int{service.PortDashboard: 18265, service.PortJupyter: 18888}, prev.Options.Ports, "the recorded choices are not changed in place")

	// Back to a default is a change too.
	got = bare.Over(prev, given("worker-cpus"))
	assert.Equal(t, []string{"worker CPUs: 6 → default"}, got.Changes(prev))
}
