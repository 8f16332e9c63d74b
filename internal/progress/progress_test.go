package progress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinesOneLinePerStep(t *testing.T) {
	var buf bytes.Buffer
	l := NewLines(&buf)
	Begin(l, "pull minio", "")
	for i := int64(0); i <= 10; i++ {
		Advance(l, "pull minio", i, 10, "bytes")
	}
	End(l, "pull minio", "")
	Begin(l, "wait ray", "")
	Failed(l, "wait ray", errors.New("ray-head exited"))
	Warning(l, "no GPU: CPU rehearsal")
	out := buf.String()
	assert.Equal(t, 5, strings.Count(out, "\n"), out)
	assert.Contains(t, out, "✓ pull minio (")
	assert.Contains(t, out, "✗ wait ray: ray-head exited")
	assert.Contains(t, out, "! no GPU: CPU rehearsal")
}

func TestJSONThrottlesUpdates(t *testing.T) {
	var buf bytes.Buffer
	j := NewJSON(&buf)
	Begin(j, "s", "")
	for i := int64(1); i <= 100; i++ {
		Advance(j, "s", i, 100, "")
	}
	End(j, "s", "ok")
	var kinds []Kind
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var e Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		kinds = append(kinds, e.Kind)
	}
	// start, first update, final (complete) update, done
	assert.Equal(t, []Kind{Start, Update, Update, Done}, kinds)
}

func TestRecorder(t *testing.T) {
	var r Recorder
	Begin(&r, "a", "")
	End(&r, "a", "")
	assert.True(t, r.Has("a", Done))
	assert.False(t, r.Has("a", Fail))
	assert.Len(t, r.Events(), 2)
}

func TestFailedByCancellationSaysCancelled(t *testing.T) {
	var r Recorder
	Failed(&r, "load", fmt.Errorf("f.zip: entry a.jpg: %w", context.Canceled))
	Failed(&r, "pull", errors.New("denied"))
	ev := r.Events()
	assert.Equal(t, "cancelled", ev[0].Message)
	assert.Equal(t, "denied", ev[1].Message)
}

func TestBytesIsOneFormatForEverySize(t *testing.T) {
	for n, want := range map[int64]string{-1: "0 B", 512: "512 B", 1536: "1.5 KiB", 79 << 20: "79 MiB", 8 << 30: "8.0 GiB", 1288490188: "1.2 GiB"} {
		assert.Equal(t, want, Bytes(n), "%d bytes", n)
	}
}

type summarized struct{}

func (summarized) Error() string   { return "could not pull 2 image(s):\n  line one\n  line two" }
func (summarized) Summary() string { return "could not pull 2 image(s) (see the error below)" }

// hinted wraps without adding words, as clierr.WithHint does.
type hinted struct{ error }

func (h hinted) Unwrap() error { return h.error }

// A long error the command prints anyway is summed up on its step's line,
// unless a wrapper added words of its own.
func TestFailedSaysTheSummaryOfALongError(t *testing.T) {
	var r Recorder
	Failed(&r, "images", summarized{})
	Failed(&r, "images", hinted{summarized{}})
	Failed(&r, "images", fmt.Errorf("lab x: %w", summarized{}))
	ev := r.Events()
	assert.Equal(t, "could not pull 2 image(s) (see the error below)", ev[0].Message)
	assert.Equal(t, "could not pull 2 image(s) (see the error below)", ev[1].Message)
	assert.Equal(t, "lab x: "+summarized{}.Error(), ev[2].Message, "the words a wrapper added are kept")
}
