package ray_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

// v1 (legacy autoscaler, plain `ray start --head`): "Usage:" / "Demands:".
const statusV1 = `======== Autoscaler status: 2026-11-21 20:00:00.000000 ========
Node status
---------------------------------------------------------------
Active:
 1 node_0a1b
 2 node_ffee
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/68.0 CPU
 0.0/2.0 GPU
 0B/120.00GiB memory
 0B/40.00GiB object_store_memory

Demands:
 {'CPU': 8.0, 'GPU': 2.0}: 1+ pending tasks/actors
 {'CPU': 4.0} * 2 (PACK): 1+ pending placement groups
 {'CPU': 16.0}: 3 from request_resources()
`

// v2 autoscaler: "Total Usage:" / "From request_resources:" / "Pending Demands:".
const statusV2 = `======== Autoscaler status: 2026-11-21 20:00:00.000000 ========
Node status
---------------------------------------------------------------
Active:
 (no active nodes)
Idle:
 1 headgroup
 2 workergroup
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/68.0 CPU
 0.0/2.0 GPU
 0B/120.00GiB memory

From request_resources:
 (none)
Pending Demands:
 {'GPU': 2.0, 'CPU': 8.0}: 1+ pending tasks/actors (1+ using placement groups)
 [{'GPU': 1.0}, {'CPU': 2.0}] (STRICT_SPREAD): 2+ pending placement groups`

func TestParseDemandsV1(t *testing.T) {
	ds := ray.ParseDemands(statusV1)
	require.Len(t, ds, 3)
	assert.Equal(t, ray.DemandTasks, ds[0].Kind)
	assert.Equal(t, "Demands", ds[0].Section)
	assert.Equal(t, []map[string]float64{{"CPU": 8, "GPU": 2}}, ds[0].Bundles)
	assert.Equal(t, 1, ds[0].Count)
	assert.True(t, ds[0].AtLeast)

	assert.Equal(t, ray.DemandPlacementGroups, ds[1].Kind)
	assert.Equal(t, "PACK", ds[1].Strategy)
	assert.Equal(t, []map[string]float64{{"CPU": 4}, {"CPU": 4}}, ds[1].Bundles)
	assert.Equal(t, map[string]float64{"CPU": 8}, ds[1].Resources)

	assert.Equal(t, ray.DemandRequested, ds[2].Kind)
	assert.Equal(t, 3, ds[2].Count)
	assert.False(t, ds[2].AtLeast)

	d, ok := ray.FindDemand(ds, map[string]float64{"GPU": 2})
	require.True(t, ok)
	assert.Equal(t, "{'CPU': 8.0, 'GPU': 2.0}: 1+ pending tasks/actors", d.Line)
	_, ok = ray.FindDemand(ds, map[string]float64{"GPU": 3})
	assert.False(t, ok)
}

func TestParseDemandsV2(t *testing.T) {
	ds := ray.ParseDemands(statusV2)
	require.Len(t, ds, 2)
	assert.Equal(t, "Pending Demands", ds[0].Section)
	assert.Equal(t, map[string]float64{"GPU": 2, "CPU": 8}, ds[0].Resources)
	assert.Equal(t, ray.DemandPlacementGroups, ds[1].Kind)
	assert.Equal(t, "STRICT_SPREAD", ds[1].Strategy)
	assert.Equal(t, 2, ds[1].Count)
	assert.Len(t, ds[1].Bundles, 2)
	_, ok := ray.FindDemand(ds, map[string]float64{"GPU": 2})
	assert.True(t, ok)
}

func TestParseDemandsNone(t *testing.T) {
	for _, s := range []string{
		"Resources\n---\nUsage:\n 0.0/2.0 GPU\n\nDemands:\n (no resource demands)\n",
		"Total Usage:\n 0.0/2.0 GPU\nPending Demands:\n (no resource demands)",
		"No cluster status. It may take a few seconds for the Ray internal services to start up.",
		// A demand-looking line outside a demand section is not a demand.
		"Usage:\n {'GPU': 2.0}: 1+ pending tasks/actors\n",
	} {
		assert.Empty(t, ray.ParseDemands(s), s)
	}
}

// The client returns the text Ray's cluster status gives, here the model's
// with a job no node can place (its clock stands still: the same text).
func TestClusterStatusFromDashboard(t *testing.T) {
	clk := raytest.NewClock(time.Unix(1_800_000_000, 0))
	srv := raytest.NewModel(t, raymodel.Config{Now: clk.Now}, "", raytest.LabNodes()...)
	c := client(t, srv, "")
	_, err := c.Submit(context.Background(), ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 2})
	require.NoError(t, err)
	text, err := c.ClusterStatus(context.Background())
	require.NoError(t, err)
	assert.Equal(t, srv.ClusterStatus(), text)
	_, ok := ray.FindDemand(ray.ParseDemands(text), map[string]float64{"GPU": 2})
	assert.True(t, ok, text)
}

func FuzzParseDemands(f *testing.F) {
	f.Add(statusV1)
	f.Add(statusV2)
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ray.ParseDemands(s) {
			if d.Count < 0 {
				t.Fatalf("negative count in %q", d.Line)
			}
		}
	})
}
