package food11

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/internal/progress"
)

// LockOptions choose how a load meets another load of the same volume.
type LockOptions struct {
	Dir     string // where volume locks live; DefaultLockDir() when empty
	Command string // the command line that loads, named to a waiting one
	NoWait  bool   // fail at once instead of waiting
}

// DefaultLockDir is one folder for every user of this host's engine: two
// loads of one volume must see each other whatever their state dirs.
func DefaultLockDir() string { return filepath.Join(os.TempDir(), "mltrain-locks") }

// lockVolume makes this load the volume's one writer. A volume's lock is
// per engine (DOCKER_HOST) and volume name; the waiting line goes through
// the reporter.
func lockVolume(ctx context.Context, volume string, o LockOptions, rep progress.Reporter) (*lock.Lock, error) {
	dir := o.Dir
	if dir == "" {
		dir = DefaultLockDir()
		_ = os.MkdirAll(dir, 0o777)
		_ = os.Chmod(dir, 0o1777) // shared like /tmp: any user's load may take a lock here
	}
	engine := sha256.Sum256([]byte(os.Getenv("DOCKER_HOST")))
	path := filepath.Join(dir, fmt.Sprintf("volume-%s-%s.lock", hex.EncodeToString(engine[:4]), volume))
	cmd := o.Command
	if cmd == "" {
		cmd = "mltrain data food11"
	}
	return lock.Acquire(ctx, path, "dataset volume "+volume, lock.Holder{Command: cmd}, o.NoWait, func(h lock.Holder) {
		progress.Note(rep, fmt.Sprintf("%s is loading dataset volume %s; waiting for it (Ctrl-C to stop)", h, volume))
	})
}
