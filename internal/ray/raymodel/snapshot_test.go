package raymodel_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// A run started again under its name (a restored backup, lab multi
// --resume, or a second pasted job given the same --run-name) reloads
// Ray Train V2's snapshot and resumes from its latest checkpoint at once,
// on the first worker group, without any failure.
func TestARunStartedAgainByNameResumesFromItsSnapshot(t *testing.T) {
	c, clk, _, b := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Register: 500 * time.Millisecond, Restart: time.Second})
	entry := "python train.py --mode ray --gpu-fraction 1 --cpus-per-worker 8 --keep-checkpoints 2 --run-name r1 --epochs "
	_, err := c.Submit("first", ray.SubmitRequest{Entrypoint: entry + "4"})
	require.NoError(t, err)
	j := run(t, c, clk, "first", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)

	snap, found, err := b.Get("ray", "r1/"+raymodel.SnapshotFile)
	require.NoError(t, err)
	require.True(t, found, "every registration writes the run's snapshot")
	var st struct {
		Results []struct {
			Dir string `json:"checkpoint_dir_name"`
		} `json:"checkpoint_results"`
		Latest struct {
			Dir string `json:"checkpoint_dir_name"`
		} `json:"latest_checkpoint_result"`
	}
	require.NoError(t, json.Unmarshal(snap, &st))
	assert.Equal(t, "checkpoint_epoch_000003", st.Latest.Dir)
	require.Len(t, st.Results, 2, "the kept checkpoints only (--keep-checkpoints 2)")
	assert.Equal(t, "checkpoint_epoch_000002", st.Results[0].Dir)
	assert.False(t, b.has("ray/r1/checkpoint_epoch_000001/checkpoint.ckpt"), "deleted after the snapshot was written")

	_, err = c.Submit("second", ray.SubmitRequest{Entrypoint: entry + "6"})
	require.NoError(t, err)
	j = run(t, c, clk, "second", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	es := mustEvents(j.Logs)
	rs := of(es, "resume")
	require.Len(t, rs, 1, "resumed once, on its first worker group")
	assert.Equal(t, "ray/r1/checkpoint_epoch_000003", rs[0]["checkpoint"])
	var trained []float64
	for _, e := range of(es, "epoch") {
		trained = append(trained, e["epoch"].(float64))
	}
	assert.Equal(t, []float64{4, 5}, trained, "it trains on from the snapshot's latest epoch")
}

// Without a snapshot a run starts from scratch even when checkpoint
// folders are there (Ray reads the snapshot, never lists the folders);
// a snapshot that does not parse fails the run.
func TestASnapshotIsWhatARunResumesFrom(t *testing.T) {
	c, clk, _, b := trainLab(t, raymodel.TrainPy{Epoch: time.Second, Register: 500 * time.Millisecond})
	require.NoError(t, b.Put("ray", "bare/checkpoint_epoch_000003/checkpoint.ckpt", []byte("x")))
	_, err := c.Submit("bare", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --gpu-fraction 1 --epochs 2 --run-name bare"})
	require.NoError(t, err)
	j := run(t, c, clk, "bare", nil)
	require.Equal(t, ray.Succeeded, j.Status, j.Logs)
	assert.Empty(t, of(mustEvents(j.Logs), "resume"))

	require.NoError(t, b.Put("ray", "bad/"+raymodel.SnapshotFile, []byte("{not json")))
	_, err = c.Submit("bad", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --gpu-fraction 1 --epochs 2 --run-name bad"})
	require.NoError(t, err)
	j = run(t, c, clk, "bad", nil)
	assert.Equal(t, ray.Failed, j.Status)
	assert.Contains(t, j.Logs, "CheckpointManagerInitializationError")
}
