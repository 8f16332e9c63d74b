package raymodel

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mltrain/mltrain/internal/ray"
)

// Ray Train V2 keeps a run's checkpoint bookkeeping in storage beside its
// checkpoints (python/ray/train/v2/_internal/execution/checkpoint/
// checkpoint_manager.py: _write_state_to_storage on every registration,
// before the checkpoints past num_to_keep are deleted; the name is
// constants.py's CHECKPOINT_MANAGER_SNAPSHOT_FILENAME). A run started
// again under the same RunConfig(name, storage_path) loads it
// (_maybe_load_state_from_storage) and hands its latest checkpoint to the
// first worker group (before_init_train_context): a run restored from a
// backup, or a second job given the same name, resumes from it.
const SnapshotFile = ray.TrainSnapshotFile

// StorageReader is a Storage a run's snapshot can be read back from; a
// storage that cannot (a double that keeps sizes only) starts every run
// from scratch, as Ray does without a snapshot.
type StorageReader interface {
	Get(bucket, key string) (data []byte, found bool, err error)
}

// snapshotState is _CheckpointManagerState's JSON (pydantic's dump).
type snapshotState struct {
	Version     int             `json:"version"`
	Checkpoints []snapshotEntry `json:"checkpoint_results"`
	Latest      *snapshotEntry  `json:"latest_checkpoint_result"`
}

type snapshotEntry struct {
	Version int            `json:"version"`
	Dir     string         `json:"checkpoint_dir_name"`
	Metrics map[string]any `json:"metrics"`
}

// writeSnapshot stores the kept checkpoints and the latest one.
func (r *trainRun) writeSnapshot(d *Driver, latest ckpt) {
	s := d.Storage()
	if s == nil {
		return
	}
	st := snapshotState{Checkpoints: []snapshotEntry{}}
	for _, c := range r.registered {
		if !c.deleted {
			st.Checkpoints = append(st.Checkpoints, snapshotEntry{Dir: c.name, Metrics: map[string]any{"epoch": c.epoch}})
		}
	}
	st.Latest = &snapshotEntry{Dir: latest.name, Metrics: map[string]any{"epoch": latest.epoch}}
	_ = s.Put(r.a.bucket(), r.a.run+"/"+SnapshotFile, []byte(mustJSON(st)))
}

// loadSnapshot reads a run's snapshot, if its storage has one, into the
// registered checkpoints; the latest is last. A snapshot that does not
// parse fails the run as CheckpointManagerInitializationError does.
func (r *trainRun) loadSnapshot(d *Driver) error {
	rd, ok := d.Storage().(StorageReader)
	if !ok {
		return nil
	}
	b, found, err := rd.Get(r.a.bucket(), r.a.run+"/"+SnapshotFile)
	if err != nil || !found {
		return err
	}
	var st snapshotState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	for _, e := range st.Checkpoints {
		if st.Latest == nil || e.Dir != st.Latest.Dir {
			r.registered = append(r.registered, ckpt{epoch: epochOf(e.Dir), name: e.Dir})
		}
	}
	if st.Latest != nil {
		r.registered = append(r.registered, ckpt{epoch: epochOf(st.Latest.Dir), name: st.Latest.Dir})
	}
	return nil
}

// epochOf is the epoch in train.py's checkpoint name; -1 when it has none.
func epochOf(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "checkpoint_epoch_"))
	if err != nil || !strings.HasPrefix(name, "checkpoint_epoch_") {
		return -1
	}
	return n
}
