// Package lock makes one writer of a lab or a dataset volume: an advisory
// file lock (flock, through gofrs/flock: it ends with the process, so a
// killed command never leaves a lock behind) plus a note of who holds it, so
// a second writer can say whom it waits for.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gofrs/flock"

	"github.com/mltrain/mltrain/internal/atomicfile"
)

// Holder says who holds a lock.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"` // e.g. "mltrain up"
	Since   time.Time `json:"since"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "another mltrain command"
	}
	return fmt.Sprintf("another `%s` (pid %d)", h.Command, h.PID)
}

// HeldError is Acquire's answer when it must not wait and someone holds the lock.
type HeldError struct {
	What   string // what the lock guards, e.g. "lab mltrain"
	Holder Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s holds %s", e.Holder, e.What)
}

// Lock is a held lock; Release lets the next writer in.
type Lock struct {
	f      *flock.Flock
	holder string
}

// pollEvery is how often a waiting writer tries again.
const pollEvery = 150 * time.Millisecond

// Acquire takes the lock file at path for me. When another process holds it,
// Acquire returns a *HeldError at once if noWait, else calls waiting once
// with the holder and waits until the lock is free or ctx ends.
func Acquire(ctx context.Context, path, what string, me Holder, noWait bool, waiting func(Holder)) (*Lock, error) {
	if err := prepareDir(path); err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	f := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o666))
	ok, err := f.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s (%s): %w", what, path, err)
	}
	var h Holder
	if !ok {
		h, ok = holderOf(ctx, f, path)
	}
	if !ok {
		if noWait {
			return nil, &HeldError{What: what, Holder: h}
		}
		if waiting != nil {
			waiting(h)
		}
		if ok, err = f.TryLockContext(ctx, pollEvery); err != nil || !ok {
			if err == nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("wait for %s to release %s: %w", h, what, err)
		}
	}
	l := &Lock{f: f, holder: holderPath(path)}
	if me.Since.IsZero() {
		me.Since = time.Now().UTC()
	}
	if me.PID == 0 {
		me.PID = os.Getpid()
	}
	b, _ := json.Marshal(me)
	// The note is for the messages of waiting writers only; failing to write
	// it changes nothing about who holds the lock.
	_ = atomicfile.Write(l.holder, b, 0o644)
	return l, nil
}

// Release unlocks; it is safe on a nil Lock and twice.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = os.Remove(l.holder)
	err := l.f.Unlock()
	l.f = nil
	return err
}

func holderPath(path string) string { return path + ".holder" }

// noteGrace is how long a holder may take to write its note after taking
// the lock: a writer that comes a moment later names it, not "another
// mltrain command".
const noteGrace = time.Second

// holderOf reads the note of the lock's holder, waiting up to noteGrace for
// one that has just taken it; got says the lock came free meanwhile and
// is now held by f.
func holderOf(ctx context.Context, f *flock.Flock, path string) (h Holder, got bool) {
	for end := time.Now().Add(noteGrace); ; {
		if h = readHolder(path); h.PID != 0 || time.Now().After(end) || ctx.Err() != nil {
			return h, false
		}
		time.Sleep(pollEvery / 3)
		if ok, err := f.TryLock(); err == nil && ok {
			return Holder{}, true
		}
	}
}

// readHolder reads the note of the current holder; a missing or partial
// note gives the zero Holder ("another mltrain command").
func readHolder(path string) Holder {
	var h Holder
	b, err := os.ReadFile(holderPath(path))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return h
	}
	_ = json.Unmarshal(b, &h)
	return h
}
