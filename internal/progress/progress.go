// Package progress is how code below cmd/ tells the user what it is doing
// without printing: it reports Events, and the command layer picks a renderer
// (live view on a TTY, one line per step when piped, JSON events with --json).
package progress

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Kind says what happened to a step.
type Kind string

const (
	Start  Kind = "start"  // a step began
	Update Kind = "update" // a step moved (Current/Total), or changed its message
	Done   Kind = "done"   // a step finished well
	Fail   Kind = "fail"   // a step failed
	Info   Kind = "info"   // a message not tied to a step's life
	Warn   Kind = "warn"   // something the user should read
)

// Event is one report. Step is a stable id ("pull rayproject/ray:2.54.0");
// Total is 0 when the size of the work is unknown. Unit is "bytes" or "" (items).
type Event struct {
	Time    time.Time `json:"time"`
	Step    string    `json:"step,omitempty"`
	Kind    Kind      `json:"kind"`
	Message string    `json:"message,omitempty"`
	Current int64     `json:"current,omitempty"`
	Total   int64     `json:"total,omitempty"`
	Unit    string    `json:"unit,omitempty"`
}

// Reporter receives events. Implementations must be safe for concurrent use:
// parallel pulls and service waits report from several goroutines.
type Reporter interface {
	Report(Event)
}

func emit(r Reporter, e Event) {
	if r == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.Report(e)
}

// Begin reports the start of step.
func Begin(r Reporter, step, msg string) { emit(r, Event{Step: step, Kind: Start, Message: msg}) }

// Advance reports how far step has come; unit is "bytes" or "" for items.
func Advance(r Reporter, step string, cur, total int64, unit string) {
	emit(r, Event{Step: step, Kind: Update, Current: cur, Total: total, Unit: unit})
}

// Say updates step's message (what it is waiting for now).
func Say(r Reporter, step, msg string) { emit(r, Event{Step: step, Kind: Update, Message: msg}) }

// End reports that step finished well.
func End(r Reporter, step, msg string) { emit(r, Event{Step: step, Kind: Done, Message: msg}) }

// Summarizer is an error whose long message the command's error prints
// anyway: its step's line says Summary instead of repeating it.
type Summarizer interface {
	error
	Summary() string
}

// Failed reports that step failed. A step stopped by its context's
// cancellation (Ctrl-C, or a sibling's failure) says "cancelled": the
// command's error tells why, and a bare "context canceled" tells nothing.
// An error that is (or wraps without adding words) a Summarizer says its
// Summary.
func Failed(r Reporter, step string, err error) {
	msg := ""
	var s Summarizer
	switch {
	case errors.Is(err, context.Canceled):
		msg = "cancelled"
	case errors.As(err, &s) && s.Error() == err.Error():
		msg = s.Summary()
	case err != nil:
		msg = err.Error()
	}
	emit(r, Event{Step: step, Kind: Fail, Message: msg})
}

// Note reports a message.
func Note(r Reporter, msg string) { emit(r, Event{Kind: Info, Message: msg}) }

// Warning reports a message the user must not miss.
func Warning(r Reporter, msg string) { emit(r, Event{Kind: Warn, Message: msg}) }

// Recorder keeps every event; tests use it to assert what a user would see.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *Recorder) Report(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events returns a copy of what was reported so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Has reports whether an event of kind k was seen for step.
func (r *Recorder) Has(step string, k Kind) bool {
	for _, e := range r.Events() {
		if e.Step == step && e.Kind == k {
			return true
		}
	}
	return false
}
