package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Lines renders one line per step start and end: for pipes, CI logs and files.
// Updates are dropped except a step's changed message, so logs stay short.
type Lines struct {
	mu      sync.Mutex
	w       io.Writer
	started map[string]time.Time
	said    map[string]string
	Verbose bool // also print updates with sizes
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
		fmt.Fprintf(l.w, "• %s%s\n", e.Step, suffix(e.Message))
	case Update:
		if e.Message != "" && l.said[e.Step] != e.Message {
			l.said[e.Step] = e.Message
			fmt.Fprintf(l.w, "  %s: %s\n", e.Step, e.Message)
		} else if l.Verbose && e.Total > 0 {
			fmt.Fprintf(l.w, "  %s: %s\n", e.Step, amount(e))
		}
	case Done:
		fmt.Fprintf(l.w, "✓ %s%s%s\n", e.Step, suffix(e.Message), l.took(e))
	case Fail:
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

func amount(e Event) string {
	if e.Unit == "bytes" {
		return fmt.Sprintf("%s / %s", humanize.IBytes(uint64(e.Current)), humanize.IBytes(uint64(e.Total)))
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

// TTY is the live view: lines for steps, and a progress bar (with rate and
// ETA) for every step that reports a size; several bars can run at once.
type TTY struct {
	mu    sync.Mutex
	p     *mpb.Progress
	lines *Lines
	bars  map[string]*mpb.Bar
}

// NewTTY returns a live renderer on w, which should be a terminal.
// Call Close before printing anything else to w.
func NewTTY(w io.Writer) *TTY {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
	// Lines above the bars go through mpb so they do not tear the bars.
	return &TTY{p: p, lines: NewLines(p), bars: map[string]*mpb.Bar{}}
}

func (t *TTY) Report(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case e.Kind == Update && e.Total > 0:
		b, ok := t.bars[e.Step]
		if !ok {
			b = t.newBar(e)
			t.bars[e.Step] = b
		}
		b.SetTotal(e.Total, false)
		b.EwmaSetCurrent(e.Current, 200*time.Millisecond)
		return
	case e.Kind == Done || e.Kind == Fail:
		if b, ok := t.bars[e.Step]; ok {
			if e.Kind == Done {
				b.SetTotal(-1, true)
			} else {
				b.Abort(false)
			}
			delete(t.bars, e.Step)
		}
	}
	t.lines.Report(e)
}

func (t *TTY) newBar(e Event) *mpb.Bar {
	counter := decor.CountersNoUnit("%d / %d")
	speed := decor.Name("")
	if e.Unit == "bytes" {
		counter = decor.Counters(decor.SizeB1024(0), "% .1f / % .1f")
		speed = decor.EwmaSpeed(decor.SizeB1024(0), "% .1f", 30)
	}
	return t.p.AddBar(e.Total,
		mpb.PrependDecorators(decor.Name(e.Step, decor.WCSyncSpaceR), counter),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), speed, decor.Name(" ETA "), decor.EwmaETA(decor.ET_STYLE_GO, 30)),
	)
}

// Close stops the live view and flushes it.
func (t *TTY) Close() {
	t.mu.Lock()
	for _, b := range t.bars {
		b.Abort(false)
	}
	t.bars = map[string]*mpb.Bar{}
	t.mu.Unlock()
	t.p.Wait()
}
