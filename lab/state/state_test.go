package state

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/stretchr/testify/assert"
)

func TestURLsAndProbes(t *testing.T) {
	p := plan.Plan{HostIP: "129.114.27.10", Bind: "0.0.0.0", Ports: service.DefaultPorts()}
	u := plan.MakeURLs(p)
	assert.Equal(t, "http://129.114.27.10:8265", u["ray_dashboard"])
	assert.Equal(t, "http://129.114.27.10:8888/lab", u["jupyter"])
	pr := plan.ProbeAddrs(p)
	assert.Equal(t, "http://127.0.0.1:8265", pr.Ray, "mltrain probes through loopback")
	assert.Equal(t, "http://127.0.0.1:9000", pr.MinIO)

	p.Bind = "10.0.0.5"
	assert.Equal(t, "http://10.0.0.5:3000", plan.MakeURLs(p)["grafana"], "ports bound to one address are reached there")
	assert.Equal(t, "http://10.0.0.5:3000", plan.ProbeAddrs(p).Grafana)
	assert.Equal(t, "http://127.0.0.1:9090", plan.ProbeAddrs(p).Prometheus, "loopback-only ports stay on loopback")
}

// No chown makes a read-only filesystem writable: its hint is another dir.
func TestUnwritableHintFitsAReadOnlyFilesystem(t *testing.T) {
	ro := unwritableHint("/srv/lab", &fs.PathError{Op: "open", Path: "/srv/lab/.write-test-1", Err: syscall.EROFS})
	assert.Contains(t, ro, "/srv/lab is on a read-only filesystem")
	assert.Contains(t, ro, "--state-dir DIR")
	assert.NotContains(t, ro, "chown")
	perm := unwritableHint("/srv/lab", &fs.PathError{Op: "open", Path: "/srv/lab/.write-test-1", Err: syscall.EACCES})
	assert.Contains(t, perm, "sudo chown -R $USER /srv/lab")
}
