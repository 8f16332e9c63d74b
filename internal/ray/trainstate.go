package ray

// TrainSnapshotFile is the object Ray Train V2 keeps beside a run's
// checkpoints, at <storage_path>/<run name>/ (python/ray/train/v2/_internal/
// constants.py: CHECKPOINT_MANAGER_SNAPSHOT_FILENAME). A run started again
// under its name resumes from the latest checkpoint it lists
// (checkpoint_manager.py _maybe_load_state_from_storage); without it the
// run starts from scratch, whatever checkpoint folders are there.
const TrainSnapshotFile = "checkpoint_manager_snapshot.json"
