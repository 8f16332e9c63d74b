package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
)

// Lines renders one line per step start and end: for pipes, CI logs and files.
// Updates are dropped except a step's changed message, so logs stay short.
type Lines struct {
	mu      sync.Mutex
	w       io.Writer
	started map[string]time.Time
	said    map[string]string
	Verbose bool // also print updates with sizes
	// live is set by TTY, whose rows show starts and messages as they
	// happen: only ends, notes and warnings become lines.
	live bool
}

// NewLines returns a line renderer writing to w.
func NewLines(w io.Writer) *Lines {
	return &Lines{w: w, started: map[string]time.Time{}, said: map[string]string{}}
}

func (l *Lines) Report(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Kind {
	case Start:
		l.started[e.Step] = e.Time
		if !l.live {
			fmt.Fprintf(l.w, "• %s%s\n", e.Step, suffix(e.Message))
		}
	case Update:
		if l.live && !l.Verbose {
			return
		}
		if e.Message != "" && l.said[e.Step] != e.Message {
			l.said[e.Step] = e.Message
			fmt.Fprintf(l.w, "  %s: %s\n", e.Step, e.Message)
		} else if l.Verbose && !l.live && e.Total > 0 {
			fmt.Fprintf(l.w, "  %s: %s\n", e.Step, amount(e))
		}
	case Done:
		delete(l.said, e.Step)
		fmt.Fprintf(l.w, "✓ %s%s%s\n", e.Step, suffix(e.Message), l.took(e))
	case Fail:
		delete(l.said, e.Step)
		fmt.Fprintf(l.w, "✗ %s%s%s\n", e.Step, suffix(e.Message), l.took(e))
	case Warn:
		fmt.Fprintf(l.w, "! %s\n", e.Message)
	default:
		fmt.Fprintf(l.w, "%s\n", e.Message)
	}
}

func (l *Lines) took(e Event) string {
	t0, ok := l.started[e.Step]
	if !ok {
		return ""
	}
	delete(l.started, e.Step)
	return fmt.Sprintf(" (%s)", e.Time.Sub(t0).Round(100*time.Millisecond))
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// Bytes is a size as every mltrain message and progress row shows it, in
// binary units: "512 B", "1.5 KiB", "79 MiB", "1.2 GiB" (go-humanize's
// IBytes; a negative size is shown as 0 B).
func Bytes(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

func amount(e Event) string {
	if e.Unit == "bytes" {
		return fmt.Sprintf("%s / %s", Bytes(e.Current), Bytes(e.Total))
	}
	return fmt.Sprintf("%d / %d", e.Current, e.Total)
}

// JSON renders each event as one JSON object per line (--json on long commands).
// Updates are throttled to one a second per step.
type JSON struct {
	mu   sync.Mutex
	enc  *json.Encoder
	last map[string]time.Time
}

// NewJSON returns a JSON-lines renderer writing to w.
func NewJSON(w io.Writer) *JSON { return &JSON{enc: json.NewEncoder(w), last: map[string]time.Time{}} }

func (j *JSON) Report(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Kind == Update && e.Message == "" {
		if t, ok := j.last[e.Step]; ok && e.Time.Sub(t) < time.Second && e.Current < e.Total {
			return
		}
		j.last[e.Step] = e.Time
	}
	_ = j.enc.Encode(e)
}
