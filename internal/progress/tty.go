package progress

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/dustin/go-humanize"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Terminal sequences written around the live view: the cursor would blink
// over the redrawn rows, so it is hidden while they are drawn.
const (
	HideCursor = "\x1b[?25l"
	ShowCursor = "\x1b[?25h"
)

// closeGrace bounds how long Close lets mpb draw the last frames of the
// aborted rows (two refresh cycles are enough) before shutting it down.
const closeGrace = 3 * time.Second

// TTY is the live view: one row per running step that redraws (a spinner,
// the step's elapsed time, its latest message or amount, and a bar with rate
// and ETA once the size of the work is known), and a line above the rows when
// a step ends, or for a note or a warning.
//
// Rows are mpb bars created with an unknown total, so mpb never completes
// them on its own (a bar with a total completes when its count reaches it,
// and then ignores SetTotal(-1, true)): a step's End or Failed aborts and
// drops its row, and Close aborts every row left. mpb's Wait returns only
// when every bar is completed or aborted, so owning each bar's end this way
// is what makes Close return whatever events came.
type TTY struct {
	mu     sync.Mutex
	w      io.Writer
	p      *mpb.Progress
	lines  *Lines
	steps  map[string]*row
	closed bool
}

// row is one running step. The decorators run in mpb's goroutines, so they
// read snap atomically and never take TTY.mu (Report holds it while it
// waits on mpb, which would deadlock).
type row struct {
	bar   *mpb.Bar
	start time.Time
	snap  atomic.Pointer[snapshot]
	// rate is measured from the first amount seen (t0, c0).
	t0 time.Time
	c0 int64
}

type snapshot struct {
	msg     string
	said    bool // msg came from an update, not from Begin
	current int64
	total   int64
	unit    string
	rate    float64 // units per second, 0 until measurable
}

// NewTTY returns a live renderer on w, which should be a terminal.
// Call Close before printing anything else to w.
func NewTTY(w io.Writer) *TTY {
	// Rendering is forced on (WithAutoRefresh) so any writer shows the live
	// view; WithWidth is the line width where w is not a terminal.
	p := mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithWidth(100),
		mpb.WithRefreshRate(150*time.Millisecond))
	_, _ = io.WriteString(w, HideCursor)
	// Lines go through mpb, which prints them above the rows without tearing them.
	l := NewLines(liveWriter{p: p, w: w})
	l.live = true
	return &TTY{w: w, p: p, lines: l, steps: map[string]*row{}}
}

// SetVerbose makes every message of a step a line too, not only its row.
func (t *TTY) SetVerbose(v bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines.Verbose = v
}

func (t *TTY) Report(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if t.closed || e.Step == "" {
		t.lines.Report(e)
		return
	}
	switch e.Kind {
	case Start:
		if r := t.steps[e.Step]; r != nil { // begun again: a fresh row
			r.end()
		}
		t.steps[e.Step] = t.newRow(e.Step, e.Time, snapshot{msg: clean(e.Message)})
	case Update:
		r := t.steps[e.Step]
		if r == nil { // an update without a Begin still gets a row
			r = t.newRow(e.Step, e.Time, snapshot{})
			t.steps[e.Step] = r
		}
		t.update(r, e)
	case Done, Fail:
		if r := t.steps[e.Step]; r != nil {
			r.end()
			delete(t.steps, e.Step)
		}
	}
	t.lines.Report(e)
}

func (t *TTY) update(r *row, e Event) {
	s := *r.snap.Load()
	if e.Message != "" {
		s.msg, s.said = clean(e.Message), true
	}
	if e.Current > 0 || e.Total > 0 {
		if r.t0.IsZero() || e.Current < s.current { // first amount, or the work started over
			r.t0, r.c0, s.rate = e.Time, e.Current, 0
		}
		if dt := e.Time.Sub(r.t0).Seconds(); dt >= 0.5 {
			s.rate = float64(e.Current-r.c0) / dt
		}
		// The bar shows only while a size is known; a count past the total
		// is clamped. Its end stays ours: SetTotal(n, false) never completes it.
		if r.bar != nil && (e.Total > 0 || s.total > 0) {
			r.bar.SetTotal(max(e.Total, 0), false)
			r.bar.SetCurrent(min(e.Current, max(e.Total, 0)))
		}
		s.current, s.total, s.unit = e.Current, e.Total, e.Unit
	}
	r.snap.Store(&s)
}

func (t *TTY) newRow(step string, at time.Time, s snapshot) *row {
	r := &row{start: at}
	r.snap.Store(&s)
	name := clean(step)
	spin := decor.Spinner(nil)
	// Add fails only once mpb has stopped (it could not draw, or Close ran):
	// such a row has no bar, and its end is still a line.
	r.bar, _ = t.p.Add(0, sizedOnly{mpb.BarStyle().Build()},
		mpb.BarWidth(30),
		mpb.PrependDecorators(
			decor.Any(func(st decor.Statistics) string {
				frame, _ := spin.Decor(st)
				return lineStart + frame // see liveWriter
			}, decor.WC{C: decor.DextraSpace | decor.DindentRight}),
			decor.Name(name, decor.WCSyncSpaceR),
			decor.Any(func(decor.Statistics) string { return elapsed(time.Since(r.start)) }, decor.WCSyncWidthR),
		),
		// The detail keeps a minimum width, so the bar (which gets what is
		// left of the line) does not shrink and grow as the figures change.
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return r.snap.Load().detail() }, decor.WC{W: 44, C: decor.DindentRight})),
	)
	return r
}

// end aborts and drops the row's bar: its line is printed instead.
func (r *row) end() {
	if r.bar != nil {
		r.bar.Abort(true)
	}
}

// liveWriter prints lines above the rows while mpb runs, and straight to
// the terminal once it has stopped (mpb refuses writes after that).
//
// Each line, like each row, starts with a carriage return (lineStart): the
// terminal echoes what is typed during the live view where the cursor is,
// below the rows (Ctrl-C echoes "^C"), and mpb's redraw moves the cursor up
// keeping its column, so the next frame would start two cells in and leave
// the echo's cells in front of it.
type liveWriter struct {
	p *mpb.Progress
	w io.Writer
}

const lineStart = "\r"

func (l liveWriter) Write(b []byte) (int, error) {
	_, err := l.p.Write(append([]byte(lineStart), b...))
	if errors.Is(err, mpb.ErrDone) { // no live view any more: a plain line
		_, err = l.w.Write(b)
	}
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close stops the live view: rows of steps that never ended become lines,
// the last frame is drawn, and the cursor is shown again. It returns even if
// mpb cannot finish drawing, and may be called more than once.
func (t *TTY) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	names := make([]string, 0, len(t.steps))
	for step := range t.steps {
		names = append(names, step)
	}
	sort.Slice(names, func(i, j int) bool { return t.steps[names[i]].start.Before(t.steps[names[j]].start) })
	now := time.Now()
	for _, step := range names {
		t.steps[step].end()
		t.lines.Report(Event{Time: now, Step: step, Kind: Fail, Message: "stopped before it finished"})
	}
	t.steps = map[string]*row{}
	t.mu.Unlock()

	done := make(chan struct{})
	go func() { t.p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		t.p.Shutdown()
		<-done
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.w, ShowCursor)
}

// sizedOnly draws the bar only once the step's size is known; a step of
// unknown size shows just its spinner and detail.
type sizedOnly struct{ bar mpb.BarFiller }

func (f sizedOnly) Fill(w io.Writer, s decor.Statistics) error {
	if s.Total <= 0 {
		return nil
	}
	return f.bar.Fill(w, s)
}

// detail is the row's right side: the amount (with rate and ETA when the
// size is known), and the latest message.
func (s *snapshot) detail() string {
	var parts []string
	if s.current > 0 || s.total > 0 {
		parts = append(parts, s.amount())
		if s.rate > 0 {
			parts = append(parts, s.size(int64(s.rate))+"/s")
			if s.total > s.current {
				eta := time.Duration(float64(s.total-s.current) / s.rate * float64(time.Second))
				parts = append(parts, "ETA "+elapsed(eta))
			}
		}
	}
	// Begin's message describes the work; once its amount shows, only a
	// newer message is worth the room.
	if s.msg != "" && (s.said || len(parts) == 0) {
		parts = append(parts, s.msg)
	}
	return strings.Join(parts, " · ")
}

func (s *snapshot) amount() string {
	if s.total > 0 {
		return fmt.Sprintf("%s / %s", s.size(s.current), s.size(s.total))
	}
	return s.size(s.current)
}

func (s *snapshot) size(n int64) string {
	if s.unit == "bytes" {
		return Bytes(n)
	}
	return humanize.Comma(n)
}

// elapsed is a duration as a row shows it: 4s, 1m05s, 1h02m.
func elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// clean makes a message one row: control characters (an escape sequence
// from a build log, a carriage return) would move the cursor under mpb.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}
