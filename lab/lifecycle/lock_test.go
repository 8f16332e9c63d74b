package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

func TestOneWriterPerLabOnItsEngine(t *testing.T) {
	old := lifecycle.LockSay
	lifecycle.LockSay = 30 * time.Millisecond
	defer func() { lifecycle.LockSay = old }()
	dir := t.TempDir()
	ctx := context.Background()
	up := lifecycle.LockOptions{Dir: dir, Engine: "unix:///var/run/docker.sock", Project: "mltrain", Command: "mltrain up"}
	first, err := lifecycle.LockLab(ctx, up, nil)
	require.NoError(t, err)

	down := up
	down.Command, down.NoWait = "mltrain down", true
	_, err = lifecycle.LockLab(ctx, down, nil)
	var held *lock.HeldError
	require.True(t, errors.As(err, &held), "got %v", err)
	assert.Contains(t, err.Error(), "another `mltrain up` (pid")
	assert.Contains(t, err.Error(), "holds lab mltrain")

	other := down
	other.Project = "mltrain-b"
	l, err := lifecycle.LockLab(ctx, other, nil)
	require.NoError(t, err, "another lab has its own writer")
	require.NoError(t, l.Release())
	other = down
	other.Engine = "tcp://gpu-node:2376"
	l, err = lifecycle.LockLab(ctx, other, nil)
	require.NoError(t, err, "the same project on another engine is another lab")
	require.NoError(t, l.Release())

	var rec progress.Recorder
	down.NoWait = false
	got := make(chan error, 1)
	go func() {
		l, err := lifecycle.LockLab(ctx, down, &rec)
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return len(rec.Events()) >= 3 }, 5*time.Second, 20*time.Millisecond)
	assert.Regexp(t, "^another `mltrain up` \\(pid \\d+\\) holds lab mltrain; waiting \\(Ctrl-C to stop\\)$", rec.Events()[0].Message)
	assert.Regexp(t, "^still waiting for another `mltrain up` \\(pid \\d+\\) to release lab mltrain: \\d+s so far, no limit \\(Ctrl-C to stop\\)$", rec.Events()[2].Message,
		"the wait says so again every LockSay")
	require.NoError(t, first.Release())
	require.NoError(t, <-got, "the waiting writer goes on once the first is done")
}
