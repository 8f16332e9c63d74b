package exercise_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/exercise"
)

// A run restored into s3://ray (mltrain restore) is continued by name: the
// job's train.py gets --run-name RUN with the lab's storage path, which is
// what makes Ray Train V2 reload the run's snapshot
// (checkpoint_manager.py _maybe_load_state_from_storage), and the model
// writes the new checkpoints under that run.
func TestMultiResumesARestoredRunByName(t *testing.T) {
	f := newFixture(t, labEngine())
	f.ray.Run = trainPy.Program
	const run = "food11-ray-restored"
	f.s3.Put("ray", run+"/checkpoint_2026-11-29_05-00-00.000001/checkpoint.ckpt", 1<<20, time.Now().Add(-time.Hour))
	f.opts.Resume = run
	_, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.Error(t, err, "checkpoint folders without Train V2's snapshot: Ray would start from scratch")
	assert.Contains(t, err.Error(), "no checkpoint_manager_snapshot.json in s3://ray/"+run+"/")
	assert.Empty(t, f.ray.Jobs(), "nothing was submitted")

	snapshot := `{"version":0,"checkpoint_results":[{"version":0,"checkpoint_dir_name":"checkpoint_epoch_000000","metrics":{}}],` +
		`"latest_checkpoint_result":{"version":0,"checkpoint_dir_name":"checkpoint_epoch_000000","metrics":{}}}`
	require.NoError(t, f.ray.Storage.Put("ray", run+"/checkpoint_manager_snapshot.json", []byte(snapshot)))
	before := len(f.s3.Keys("ray", run+"/"))
	rec, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.NoError(t, err)
	assert.Contains(t, rec.Observed, "run "+run+" resumed from checkpoint_epoch_000000 (epoch 0)")
	job, _ := f.ray.Job(rec.Jobs[0].SubmissionID)
	assert.Contains(t, job.Request.Entrypoint, "--run-name "+run)
	assert.NotContains(t, job.Request.Entrypoint, "--run-name "+rec.Jobs[0].SubmissionID)
	assert.Greater(t, len(f.s3.Keys("ray", run+"/")), before, "the run's new checkpoints go under its own name")
}

func TestResumeIsRefusedWithoutACheckpointOrForAnotherExercise(t *testing.T) {
	f := newFixture(t, labEngine())
	f.ray.Run = trainPy.Program
	f.opts.Resume = "food11-ray-nothing"
	_, err := exercise.Run(context.Background(), f.env, "multi", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `run "food11-ray-nothing" has no checkpoint in s3://ray/food11-ray-nothing/`)
	assert.Contains(t, clierr.Hint(err), "restore SRC")
	assert.Empty(t, f.ray.Jobs(), "nothing was submitted")

	_, err = exercise.Run(context.Background(), f.env, "fractional", f.opts)
	require.Error(t, err)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), "only exercise multi takes it")
}
