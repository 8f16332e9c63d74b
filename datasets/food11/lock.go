package food11

import (
	"context"
	"fmt"
	"os"

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
func DefaultLockDir() string { return lock.DefaultDir() }

// lockVolume makes this load the volume's one writer. A volume's lock is
// per engine (DOCKER_HOST) and volume name; the waiting line goes through
// the reporter.
func lockVolume(ctx context.Context, volume string, o LockOptions, rep progress.Reporter) (*lock.Lock, error) {
	path := lock.File(o.Dir, "volume", os.Getenv("DOCKER_HOST"), volume)
	cmd := o.Command
	if cmd == "" {
		cmd = "mltrain data food11"
	}
	return lock.Acquire(ctx, path, "dataset volume "+volume, lock.Holder{Command: cmd}, o.NoWait, func(h lock.Holder) {
		progress.Note(rep, fmt.Sprintf("%s is loading dataset volume %s; waiting for it (Ctrl-C to stop)", h, volume))
	})
}
