package plan

import (
	"fmt"
	"strings"
	"time"
)

// LeaseWarn is how long before the node's lease ends every command
// reminds the user to back up: a backup and the copy off the node take
// minutes, and the node is wiped when the lease ends.
const LeaseWarn = 30 * time.Minute

// ErrBadLeaseEnd is wrapped by ParseLeaseEnd's errors.
var ErrBadLeaseEnd = fmt.Errorf("not a lease end")

// ParseLeaseEnd reads when the node's lease ends: an RFC 3339 time
// ("2026-11-29T17:00:00Z", or with an offset such as +01:00) or a duration
// from now ("+2h50m"; the plus may be left out). The end is kept in UTC to
// the second. An end that has already passed is refused: it is a typo, and
// a lab told so would refuse every exercise.
func ParseLeaseEnd(s string, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(s)
	var end time.Time
	if d, err := time.ParseDuration(strings.TrimPrefix(v, "+")); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("lease end %q: the duration from now must be positive: %w", s, ErrBadLeaseEnd)
		}
		end = now.Add(d)
	} else if t, err := time.Parse(time.RFC3339, v); err == nil {
		end = t
	} else {
		return time.Time{}, fmt.Errorf("lease end %q is neither an RFC 3339 time (such as %s) nor a duration from now (such as +2h50m): %w",
			s, now.Add(3*time.Hour).UTC().Truncate(time.Hour).Format(time.RFC3339), ErrBadLeaseEnd)
	}
	end = end.UTC().Truncate(time.Second)
	if !end.After(now) {
		return time.Time{}, fmt.Errorf("lease end %q (%s) has already passed (it is %s): %w", s, clock(end, now), clock(now, now), ErrBadLeaseEnd)
	}
	return end, nil
}

// Lease is where a lab stands with its node's lease at one moment.
type Lease struct {
	End time.Time `json:"end"`
	// LeftSeconds is the time to End; negative once it has passed.
	LeftSeconds int64  `json:"left_seconds"`
	Left        string `json:"left"`   // in words: "ends in 2h10m (17:00 UTC)"
	Passed      bool   `json:"passed"` // the node may be wiped at any moment
	// Warn: within LeaseWarn of the end, or past it: time to back up.
	Warn bool `json:"warn"`
	now  time.Time
}

// LeaseAt is the lease that ends at end as seen at now; nil when no end
// is known.
func LeaseAt(end, now time.Time) *Lease {
	if end.IsZero() {
		return nil
	}
	left := end.Sub(now)
	l := &Lease{End: end.UTC(), LeftSeconds: int64(left / time.Second), Passed: left <= 0, Warn: left <= LeaseWarn, now: now}
	l.Left = l.text()
	return l
}

func (l Lease) text() string {
	left := l.End.Sub(l.now)
	if left <= 0 {
		return fmt.Sprintf("ended %s ago (%s)", Span(-left), clock(l.End, l.now))
	}
	return fmt.Sprintf("ends in %s (%s)", Span(left), clock(l.End, l.now))
}

// Fits reports whether work that takes d, started now, ends before the
// lease does.
func (l Lease) Fits(d time.Duration) bool { return l.End.Sub(l.now) >= d }

// Reminder is the line every command prints from LeaseWarn before the end
// on, naming backup, the command line that saves the lab's work; "" before.
func (l Lease) Reminder(backup string) string {
	if !l.Warn {
		return ""
	}
	save := "save your work now: " + backup + ", then copy the file off the node"
	if l.Passed {
		return fmt.Sprintf("lease end %s has passed (%s ago): the node may be wiped at any moment: %s", clock(l.End, l.now), Span(l.now.Sub(l.End)), save)
	}
	return fmt.Sprintf("lease %s: %s", l.Left, save)
}

// Span is d to the nearest minute as a person reads it: "2h50m", "24m",
// "under a minute" (a lease set to +20m reads 20m, not 19m59s).
func Span(d time.Duration) string {
	if d < 30*time.Second {
		return "under a minute"
	}
	d = d.Round(time.Minute)
	switch h, m := int(d/time.Hour), int(d%time.Hour/time.Minute); {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	default:
		return fmt.Sprintf("%dh%dm", h, m)
	}
}

// clock is t as a time of day in UTC, with its date when it is not today's.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

// leaseWords is a recorded lease end in a `changed:` note.
func leaseWords(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}
