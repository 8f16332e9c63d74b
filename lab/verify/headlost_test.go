package verify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/ray"
)

// After `docker restart` of the head, the worker containers still run but
// the new cluster lists only the head: ray.nodes says the workers lost their
// head and names the one command that brings the lab back.
func TestRayNodesSaysTheWorkersLostTheirHead(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	f.eng.Containers["ray-head"].StartedAt = now.Add(-20 * time.Second)
	for _, w := range []string{"ray-worker-0", "ray-worker-1"} {
		f.eng.Containers[w].StartedAt = now.Add(-time.Hour)
	}
	f.ray.nodes = []ray.Node{{NodeID: "h2", NodeIP: headIP, IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 2}}}
	c := find(t, f.run(Options{Only: []string{GroupRay}}), "ray.nodes")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Evidence, "ray-worker-0, ray-worker-1 lost their head: the head restarted 20s ago")
	assert.Contains(t, c.Evidence, "GCS reconnect timeout (60s)")
	assert.NotContains(t, c.Evidence, "running, but Ray lists no ALIVE node", "said once, as lost")
	assert.Equal(t, "mltrain up", c.Fix)

	// Workers started after the head (a fresh up, or Docker restarted them)
	// that Ray does not list yet are not said to have lost it.
	f = newFixture(t)
	f.eng.Containers["ray-head"].StartedAt = now.Add(-time.Hour)
	for _, w := range []string{"ray-worker-0", "ray-worker-1"} {
		f.eng.Containers[w].StartedAt = now.Add(-time.Second)
	}
	f.ray.nodes = f.ray.nodes[:1]
	c = find(t, f.run(Options{Only: []string{GroupRay}}), "ray.nodes")
	assert.Equal(t, Fail, c.Status)
	assert.NotContains(t, c.Evidence, "lost their head")
	assert.Contains(t, c.Evidence, "running, but Ray lists no ALIVE node")
}
