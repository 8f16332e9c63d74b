// Package lock makes one writer of a lab or a dataset volume: an advisory
// file lock (flock: it ends with the process, so a killed command never
// leaves a lock behind) plus a note of who holds it, so a second writer can
// say whom it waits for. Locks live in a directory shared by the host's
// users (file.go): no other user can redirect them or plant what they open.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

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
	f      *os.File // holds the flock while open
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
	f, err := openLockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s (%s): %w", what, path, err)
	}
	var h Holder
	if !ok {
		h, ok = holderOf(ctx, f, path)
	}
	if !ok {
		if noWait {
			f.Close()
			return nil, &HeldError{What: what, Holder: h}
		}
		if waiting != nil {
			waiting(h)
		}
		if err := waitLock(ctx, f); err != nil {
			f.Close()
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
	err := errors.Join(unix.Flock(int(l.f.Fd()), unix.LOCK_UN), l.f.Close())
	l.f = nil
	return err
}

// tryLock takes the flock on f if it is free.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// waitLock polls for the flock on f until it is free or ctx ends; polling
// rather than a blocking flock lets ctx end the wait.
func waitLock(ctx context.Context, f *os.File) error {
	for {
		if ok, err := tryLock(f); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func holderPath(path string) string { return path + ".holder" }

// noteGrace is how long a holder may take to write its note after taking
// the lock: a writer that comes a moment later names it, not "another
// mltrain command".
const noteGrace = time.Second

// holderOf reads the note of the lock's holder, waiting up to noteGrace for
// one that has just taken it; got says the lock came free meanwhile and
// is now held by f.
func holderOf(ctx context.Context, f *os.File, path string) (h Holder, got bool) {
	for end := time.Now().Add(noteGrace); ; {
		if h = readHolder(path); h.PID != 0 || time.Now().After(end) || ctx.Err() != nil {
			return h, false
		}
		time.Sleep(pollEvery / 3)
		if ok, err := tryLock(f); err == nil && ok {
			return Holder{}, true
		}
	}
}

// readHolder reads the note of the current holder; a missing or partial
// note gives the zero Holder ("another mltrain command"). A symbolic link
// planted as the note is not followed: it could show this user's files.
func readHolder(path string) Holder {
	var h Holder
	f, err := os.OpenFile(holderPath(path), os.O_RDONLY|openFlags, 0)
	if err != nil {
		return h
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return h
	}
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	_ = json.Unmarshal(b, &h)
	return h
}
