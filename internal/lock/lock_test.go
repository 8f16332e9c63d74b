package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSecondWriterRefusedWithNoWait(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lab.lock")
	first, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain up"}, true, nil)
	require.NoError(t, err)
	_, err = Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain down"}, true, nil)
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "mltrain up", held.Holder.Command)
	require.Contains(t, err.Error(), "another `mltrain up` (pid")
	require.Contains(t, err.Error(), "holds lab x")
	require.NoError(t, first.Release())
	again, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain down"}, true, nil)
	require.NoError(t, err, "a released lock is free")
	require.NoError(t, again.Release())
	require.NoError(t, again.Release(), "twice is harmless")
}

func TestSecondWriterWaitsVisiblyThenGetsIt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lab.lock")
	first, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain up"}, false, nil)
	require.NoError(t, err)
	saw := make(chan Holder, 1)
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain up"}, false, func(h Holder) { saw <- h })
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	h := <-saw
	require.Equal(t, "mltrain up", h.Command)
	select {
	case err := <-got:
		t.Fatalf("the second writer went on while the first held the lock: %v", err)
	case <-time.After(3 * pollEvery):
	}
	require.NoError(t, first.Release())
	require.NoError(t, <-got)
}

func TestWaitEndsWithTheContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lab.lock")
	first, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain up"}, false, nil)
	require.NoError(t, err)
	defer first.Release()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(2 * pollEvery); cancel() }()
	_, err = Acquire(ctx, p, "lab x", Holder{Command: "mltrain up"}, false, nil)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

// A writer that comes just after the holder took the lock, before its note
// was written, still names the holder.
func TestTheHolderIsNamedWhenItsNoteComesLate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lab.lock")
	first, err := Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain up"}, true, nil)
	require.NoError(t, err)
	defer first.Release()
	note, err := os.ReadFile(holderPath(p))
	require.NoError(t, err)
	require.NoError(t, os.Remove(holderPath(p)))
	go func() {
		time.Sleep(noteGrace / 4)
		_ = os.WriteFile(holderPath(p), note, 0o644)
	}()
	_, err = Acquire(context.Background(), p, "lab x", Holder{Command: "mltrain down"}, true, nil)
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.Equal(t, "mltrain up", held.Holder.Command)
}
