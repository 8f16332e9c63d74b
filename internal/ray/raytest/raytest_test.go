package raytest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

func get(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

// A later Ray's field sits on the answer and on each row, never inside a
// row's maps (resources, labels), whose values a client decodes typed.
func TestLaterRayAddsAFieldToTheAnswerAndEachRow(t *testing.T) {
	m := raytest.NewLab(t, "")
	assert.NotContains(t, get(t, m.URL+"/api/version"), "later_ray_field", "Ray 2.54 until told")
	m.LaterRay()
	assert.Contains(t, get(t, m.URL+"/api/version"), "later_ray_field")
	rows := get(t, m.URL+"/api/v0/nodes")["data"].(map[string]any)["result"].(map[string]any)["result"].([]any)
	require.Len(t, rows, 3)
	for _, r := range rows {
		row := r.(map[string]any)
		assert.Contains(t, row, "later_ray_field")
		assert.NotContains(t, row["resources_total"], "later_ray_field")
	}
	assert.Equal(t, []string{"GET /api/version", "GET /api/version", "GET /api/v0/nodes"}, m.Calls())
}

func TestTickMovesTheModelsClockWithEachRequest(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	clk := raytest.NewClock(start)
	m := raytest.NewModel(t, raymodel.Config{Now: clk.Now}, "")
	m.Tick(clk, time.Second)
	get(t, m.URL+"/api/version")
	get(t, m.URL+"/api/version")
	assert.Equal(t, start.Add(2*time.Second), clk.Now())
}

func TestJoinNodesListsADeadRowDead(t *testing.T) {
	m := raytest.NewModel(t, raymodel.Config{}, "")
	m.JoinNodes(ray.Node{NodeID: "h", NodeIP: "10.0.0.2", IsHeadNode: true, State: "ALIVE"},
		ray.Node{NodeID: "w", NodeIP: "10.0.0.3", State: "DEAD", ResourcesTotal: map[string]float64{"GPU": 1}})
	states := map[string]string{}
	for _, n := range m.Nodes() {
		states[n.NodeID] = n.State
	}
	assert.Equal(t, map[string]string{"h": "ALIVE", "w": "DEAD"}, states)
	assert.False(t, m.Answering("w"))
}
