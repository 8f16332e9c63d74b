package raymodel_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// bucket is a Storage in memory.
type bucket struct {
	mu   sync.Mutex
	objs map[string]bool
	data map[string][]byte
}

func (b *bucket) Put(bkt, key string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objs == nil {
		b.objs, b.data = map[string]bool{}, map[string][]byte{}
	}
	b.objs[bkt+"/"+key] = true
	b.data[bkt+"/"+key] = data
	return nil
}

func (b *bucket) Get(bkt, key string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.data[bkt+"/"+key]
	return d, ok, nil
}

func (b *bucket) Delete(bkt, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objs, bkt+"/"+key)
	return nil
}

func (b *bucket) has(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.objs[key]
}

type ev map[string]any

// events reads train.py's event lines and result line from a job log.
func events(logs string) (out []ev, result ev) {
	for _, line := range strings.Split(logs, "\n") {
		for _, m := range []string{raymodel.EventMarker, raymodel.ResultMarker} {
			if i := strings.Index(line, m+" "); i >= 0 {
				var e ev
				if json.Unmarshal([]byte(line[i+len(m)+1:]), &e) == nil {
					if m == raymodel.ResultMarker {
						result = e
					} else {
						out = append(out, e)
					}
				}
			}
		}
	}
	return out, result
}

func of(es []ev, kind string) []ev {
	var out []ev
	for _, e := range es {
		if e["event"] == kind {
			out = append(out, e)
		}
	}
	return out
}

func trainLab(t *testing.T, tp raymodel.TrainPy) (*raymodel.Cluster, *clock, []string, *bucket) {
	c, clk, ids := lab(t, raymodel.Config{})
	b := &bucket{}
	c.Storage = b
	c.Run = tp.Program
	return c, clk, ids, b
}

// run moves the clock in steps until job id is terminal.
func run(t *testing.T, c *raymodel.Cluster, clk *clock, id string, each func(raymodel.Job)) raymodel.Job {
	t.Helper()
	for i := 0; i < 1000; i++ {
		j, _ := c.Job(id)
		if each != nil {
			each(j)
		}
		if j.Status.Terminal() {
			return j
		}
		clk.add(250 * time.Millisecond)
	}
	t.Fatal("job never ended")
	return raymodel.Job{}
}

func TestTrainRestartsOnAnotherNodeFromTheLatestRegisteredCheckpoint(t *testing.T) {
	c, clk, ids, b := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Register: 500 * time.Millisecond, Restart: time.Second})
	entry := "python train.py --mode ray --workers 1 --gpu-fraction 1 --cpus-per-worker 8 --max-failures 2 --epochs 6 --run-name fault-1"
	_, err := c.Submit("fault-1", ray.SubmitRequest{Entrypoint: entry})
	require.NoError(t, err)
	stopped := false
	j := run(t, c, clk, "fault-1", func(j raymodel.Job) {
		es, _ := events(j.Logs)
		epochs, cps := of(es, "epoch"), of(es, "checkpoint")
		if len(epochs) > len(cps) {
			// Uploaded, not yet reported: the object is in storage first.
			e := int(epochs[len(epochs)-1]["epoch"].(float64))
			assert.True(t, b.has(fmt.Sprintf("ray/fault-1/checkpoint_epoch_%06d/checkpoint.ckpt", e)))
		}
		if !stopped && len(cps) == 2 {
			stopped = true
			w := of(es, "worker")[0]
			require.True(t, c.UnregisterIP(w["node_ip"].(string)))
		}
	})
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	assert.Equal(t, ids[0], j.DriverNodeID, "no entrypoint resources: the driver stays on the head")
	es, res := events(j.Logs)
	ws, rs := of(es, "worker"), of(es, "resume")
	require.Len(t, ws, 2)
	require.Len(t, rs, 1)
	assert.NotEqual(t, ws[0]["node_id"], ws[1]["node_id"], "restarted on another node")
	assert.Equal(t, "ray/fault-1/checkpoint_epoch_000001", rs[0]["checkpoint"])
	assert.Equal(t, true, res["ok"])
	assert.True(t, b.has("ray/fault-1/checkpoint_epoch_000005/checkpoint.ckpt"))
	assert.False(t, b.has("ray/fault-1/checkpoint_epoch_000002/checkpoint.ckpt"), "keep 2: older ones deleted")
}

func TestTrainFailsOnceMaxFailuresAreSpent(t *testing.T) {
	c, clk, _, _ := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Restart: time.Second})
	_, err := c.Submit("f", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --max-failures 0 --epochs 5"})
	require.NoError(t, err)
	done := false
	j := run(t, c, clk, "f", func(j raymodel.Job) {
		es, _ := events(j.Logs)
		if w := of(es, "worker"); len(w) == 1 && !done {
			done = c.SilenceIP(w[0]["node_ip"].(string))
		}
	})
	assert.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrEntrypoint, j.ErrorType)
	_, res := events(j.Logs)
	assert.Equal(t, false, res["ok"])
}

func TestTwoTrainWorkersTakeBothGPUsAndAThirdWaitsAsAPlacementGroupDemand(t *testing.T) {
	c, clk, _, _ := trainLab(t, raymodel.TrainPy{Epoch: time.Second})
	_, err := c.Submit("multi", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --workers 2 --gpu-fraction 1 --epochs 2"})
	require.NoError(t, err)
	_, err = c.Submit("three", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --workers 3 --gpu-fraction 1 --epochs 1"})
	require.NoError(t, err)
	j := run(t, c, clk, "multi", nil)
	es, _ := events(j.Logs)
	ws := of(es, "worker")
	require.Len(t, ws, 2)
	assert.NotEqual(t, ws[0]["node_id"], ws[1]["node_id"])
	three, _ := c.Job("three")
	assert.Equal(t, ray.Running, three.Status, "its driver runs; its workers wait")
	ds := ray.ParseDemands(c.ClusterStatus())
	require.Len(t, ds, 1, c.ClusterStatus())
	assert.Equal(t, ray.DemandPlacementGroups, ds[0].Kind)
	assert.Equal(t, 3.0, ds[0].Resources["GPU"])
}

func TestTwoTrainWorkersPackOnANodeWithTwoGPUs(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := raymodel.New(raymodel.Config{Now: clk.now})
	c.Join(raymodel.NodeSpec{IP: "10.0.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}})
	two := c.Join(raymodel.NodeSpec{IP: "10.0.0.3", Total: raymodel.Resources{"CPU": 32, "GPU": 2}})
	c.Join(raymodel.NodeSpec{IP: "10.0.0.4", Total: raymodel.Resources{"CPU": 32, "GPU": 1}})
	c.Run = raymodel.TrainPy{Epoch: time.Second}.Program
	_, err := c.Submit("multi", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --workers 2 --gpu-fraction 1 --epochs 1"})
	require.NoError(t, err)
	j := run(t, c, clk, "multi", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	es, _ := events(j.Logs)
	ws := of(es, "worker")
	require.Len(t, ws, 2)
	assert.Equal(t, two, ws[0]["node_id"], "PACK: the node that holds the whole group")
	assert.Equal(t, two, ws[1]["node_id"])
}

func TestTuneTrialsEndByASHAByTheScriptAndByError(t *testing.T) {
	c, clk, _, _ := trainLab(t, raymodel.TrainPy{Epoch: time.Second, TrialEnd: func(i int) (string, int) {
		switch i {
		case 5:
			return raymodel.EndScript, 1
		case 6:
			return raymodel.EndError, 1
		}
		return "", 0
	}})
	_, err := c.Submit("tune", ray.SubmitRequest{Entrypoint: "python train.py --mode tune --num-samples 8 --epochs 4 --gpu-fraction 0.5 --cpus-per-worker 4"})
	require.NoError(t, err)
	j := run(t, c, clk, "tune", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	_, res := events(j.Logs)
	n := map[string]int{}
	for _, tr := range res["trials"].([]any) {
		n[tr.(map[string]any)["end"].(string)]++
	}
	assert.Equal(t, 1, n[raymodel.EndScript])
	assert.Equal(t, 1, n[raymodel.EndError])
	assert.Positive(t, n[raymodel.EndScheduler], "ASHA cut some at a rung")
	assert.Positive(t, n[raymodel.EndMaxT], "the best ran to max_t")
	assert.Equal(t, 8, n[raymodel.EndScript]+n[raymodel.EndError]+n[raymodel.EndScheduler]+n[raymodel.EndMaxT])
	assert.Equal(t, false, res["ok"], "a trial errored")
}

func TestAnOlderTrainPySaysNeitherItsDriverNorItsCheckpoints(t *testing.T) {
	c, clk, _, b := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Unannounced: true})
	_, err := c.Submit("old", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --epochs 2 --run-name old"})
	require.NoError(t, err)
	j := run(t, c, clk, "old", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	es, res := events(j.Logs)
	assert.Empty(t, of(es, "driver"))
	assert.Empty(t, of(es, "checkpoint"))
	assert.Len(t, of(es, "epoch"), 2)
	assert.True(t, b.has("ray/old/checkpoint_epoch_000001/checkpoint.ckpt"), "it checkpoints all the same")
	assert.Equal(t, "ray/old/checkpoint_epoch_000001", res["checkpoint"])
}

func TestATrainPyMayResumeFromACheckpointOfItsOwnChoosing(t *testing.T) {
	handed := -2
	c, clk, _, _ := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Restart: time.Second,
		ResumeFrom: func(h int) int { handed = h; return 7 }})
	_, err := c.Submit("w", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --max-failures 2 --epochs 10 --run-name w"})
	require.NoError(t, err)
	stopped := false
	j := run(t, c, clk, "w", func(j raymodel.Job) {
		es, _ := events(j.Logs)
		if cps := of(es, "checkpoint"); !stopped && len(cps) == 1 {
			stopped = c.SilenceIP(of(es, "worker")[0]["node_ip"].(string))
		}
	})
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	assert.Equal(t, 0, handed, "Ray handed it the checkpoint it had registered")
	es, _ := events(j.Logs)
	rs := of(es, "resume")
	require.Len(t, rs, 1)
	assert.Equal(t, "ray/w/checkpoint_epoch_000007", rs[0]["checkpoint"])
	var after []float64
	for _, e := range of(es, "epoch") {
		if e["time"].(float64) >= rs[0]["time"].(float64) {
			after = append(after, e["epoch"].(float64))
		}
	}
	assert.Equal(t, []float64{8, 9}, after, "it trains on from the epoch it chose")
}

// The by-hand fractional step pasted three times in the same second (no
// --run-name): each job trains a run of its own, named after its
// submission id as train.py names it, so none resumes from another's
// checkpoints.
func TestJobsWithoutARunNameTrainRunsOfTheirOwn(t *testing.T) {
	c, clk, _, b := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Register: 500 * time.Millisecond, Restart: time.Second})
	entry := "python train.py --mode ray --gpu-fraction 0.5 --cpus-per-worker 4 --epochs 2"
	ids := []string{"raysubmit_a", "raysubmit_b", "raysubmit_c"}
	for _, id := range ids {
		_, err := c.Submit(id, ray.SubmitRequest{Entrypoint: entry})
		require.NoError(t, err)
	}
	runs := map[string]bool{}
	for _, id := range ids {
		j := run(t, c, clk, id, nil)
		require.Equal(t, ray.Succeeded, j.Status, j.Logs)
		_, res := events(j.Logs)
		assert.Equal(t, "food11-ray-"+id, res["run"])
		runs[res["run"].(string)] = true
		assert.True(t, b.has("ray/food11-ray-"+id+"/checkpoint_epoch_000001/checkpoint.ckpt"), "the run's own checkpoints")
		for _, e := range of(mustEvents(j.Logs), "resume") {
			t.Errorf("job %s resumed from %v: a fresh run has nothing to resume", id, e["checkpoint"])
		}
	}
	assert.Len(t, runs, 3)
}

func mustEvents(logs string) []ev { es, _ := events(logs); return es }
