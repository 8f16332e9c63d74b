package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/internal/progress"
)

// LockOptions say which lab a command writes and how it meets another writer.
// A lab is its project on its engine, not its state dir: two state dirs
// naming one project still drive the same containers and networks.
type LockOptions struct {
	Dir     string // where the lock lives; lock.DefaultDir() when empty
	Engine  string // the engine's address (docker.Engine.Host)
	Project string
	Command string // what the holder runs, named to a waiting writer: "mltrain up"
	NoWait  bool   // fail at once (a *lock.HeldError) instead of waiting
}

// LockLab makes this command the lab's one writer: up, down, join, worker
// and the exercises that stop workers hold it, so two of them never tear
// each other's containers and networks down. A second writer waits, saying
// whom for through rep, until the first ends (a killed one releases it too).
// The wait has no limit; it says so again every LockSay.
func LockLab(ctx context.Context, l LockOptions, rep progress.Reporter) (*lock.Lock, error) {
	what := "lab " + l.Project
	path := lock.File(l.Dir, "lab", l.Engine, l.Project)
	done := make(chan struct{})
	defer close(done)
	return lock.Acquire(ctx, path, what, lock.Holder{Command: l.Command}, l.NoWait, func(h lock.Holder) {
		progress.Note(rep, fmt.Sprintf("%s holds %s; waiting (Ctrl-C to stop)", h, what))
		start := time.Now()
		go func() {
			t := time.NewTicker(LockSay)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-t.C:
					progress.Note(rep, fmt.Sprintf("still waiting for %s to release %s: %s so far, no limit (Ctrl-C to stop)",
						h, what, time.Since(start).Round(time.Second)))
				}
			}
		}()
	})
}

// LockSay is how often a writer waiting for the lab's lock says so: no
// wait is silent.
var LockSay = 15 * time.Second
