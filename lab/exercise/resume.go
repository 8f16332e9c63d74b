package exercise

import (
	"context"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
)

// Resumable is the exercise that --resume continues: the one Ray Train run
// of one job. Others submit several jobs, and Ray Train reloads a run's
// state by its name, so jobs sharing a name would resume from each other.
const Resumable = "multi"

// checkResume refuses --resume where it means nothing, and a run with no
// checkpoint in the lab's bucket: Ray Train V2 would start it from scratch
// (checkpoint_manager.py _maybe_load_state_from_storage finds no snapshot),
// which is not what the user asked for.
func checkResume(ctx context.Context, env Env, name, run string) error {
	if run == "" {
		return nil
	}
	if name != Resumable {
		return clierr.WithCode(clierr.Hintf("run '"+env.Commands.Line("lab", Resumable, "--resume", run)+"'",
			"--resume continues a Ray Train run: only exercise %s takes it, not %s", Resumable, name), clierr.ExitUsage)
	}
	if env.Store == nil {
		return nil // no MinIO to check with: Ray says what it finds
	}
	cps, err := env.Store.ListCheckpoints(ctx, env.Bucket, run+"/")
	if err != nil {
		return err
	}
	restore := "restore the backup that holds it ('" + env.Commands.Line("restore", "SRC") + "'), or pick a run that has checkpoints (the MinIO console's bucket " + env.Bucket + ")"
	if len(cps) == 0 {
		return clierr.Hintf(restore, "run %q has no checkpoint in s3://%s/%s/: nothing to resume", run, env.Bucket, run)
	}
	// Ray Train V2 resumes from the run's snapshot, never from a listing of
	// its folders (checkpoint_manager.py _maybe_load_state_from_storage):
	// without it the run would start again from scratch.
	snap, err := env.Store.Exists(ctx, env.Bucket, run+"/"+ray.TrainSnapshotFile)
	if err != nil {
		return err
	}
	if !snap {
		return clierr.Hintf(restore, "run %q has checkpoints but no %s in s3://%s/%s/: Ray Train would start it from scratch",
			run, ray.TrainSnapshotFile, env.Bucket, run)
	}
	return nil
}
