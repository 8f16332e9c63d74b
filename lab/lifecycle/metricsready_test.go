package lifecycle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

// A worker recreated at its old address: Prometheus's last scrape there
// failed (down) and verify's metrics.prometheus fails on it at once, so up
// waits for the next scrape. Targets not scraped yet, or of DEAD nodes,
// hold nothing up.
func TestScrapesReadyWaitsOutADownTargetOfAnAliveNode(t *testing.T) {
	var targets []promTarget
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/v1/targets", r.URL.Path)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"activeTargets": targets}})
	}))
	defer prom.Close()
	rs := raytest.NewModel(t, raymodel.Config{}, "")
	rc, err := ray.New(ray.Options{Address: rs.URL})
	require.NoError(t, err)
	rs.JoinNodes([]ray.Node{{NodeID: "h", NodeIP: "10.0.0.2", IsHeadNode: true, State: "ALIVE"},
		{NodeID: "w1", NodeIP: "10.0.0.4", State: "ALIVE"}, {NodeID: "gone", NodeIP: "10.0.0.9", State: "DEAD"}}...)
	check := scrapesReady(rc, prom.URL)
	target := func(ip, health string) promTarget {
		return promTarget{Labels: map[string]string{"job": "ray"}, ScrapeURL: "http://" + ip + ":8080/metrics", Health: health,
			LastError: map[string]string{"down": "connection refused"}[health]}
	}

	targets = []promTarget{target("10.0.0.2", "up"), target("10.0.0.4", "down"), target("10.0.0.9", "down")}
	_, err = check.Run(context.Background())
	assert.EqualError(t, err, "the last scrape of ALIVE Ray node(s) failed: http://10.0.0.4:8080/metrics (connection refused); waiting for Prometheus's next")

	targets = []promTarget{target("10.0.0.2", "up"), target("10.0.0.4", "up"), target("10.0.0.9", "down")}
	detail, err := check.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "2 ALIVE node(s) listed, none scraped down (3 Ray targets)", detail)

	targets = []promTarget{target("10.0.0.2", "unknown")}
	_, err = check.Run(context.Background())
	assert.NoError(t, err, "not scraped yet: verify waits for it itself")
}
