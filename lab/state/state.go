package state

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
)

// ErrNoLab matches (errors.Is) the error of reading a state dir that holds
// no lab: 'mltrain fleet verify' tells "no lab on that host" from a broken one.
var ErrNoLab = errors.New("no lab")

type noLabError struct{ path string }

func (e noLabError) Error() string      { return "no lab state at " + e.path }
func (noLabError) Is(target error) bool { return target == ErrNoLab }

// State is the content of StateFile, the one record of the lab's plan
// (which services it has, where they answer) for later commands (lab,
// verify, status) to reach the lab without re-planning. Up and join write
// it before starting anything and set UpAt when the lab is proven ready.
type State struct {
	Project string      `json:"project"`
	Plan    plan.Plan   `json:"plan"`
	URLs    plan.URLs   `json:"urls"`
	Probes  plan.Probes `json:"probes"`
	// UpAt is when up (or join) proved the lab ready; zero while the run
	// that wrote the plan has not finished.
	UpAt time.Time `json:"up_at,omitzero"`
	// Choices are what up was asked for; the next up starts from them
	// (nil in a state.json of an older mltrain, or written by join).
	Choices *plan.Choices `json:"choices,omitempty"`
}

// Choices are the lab's recorded choices, if any: a missing or unreadable
// state.json has none (up says why an unreadable one stops it).
func (d Dir) Choices() (plan.Choices, bool) {
	var s State
	if err := d.ReadJSON(StateFile, &s); err != nil || s.Choices == nil {
		return plan.Choices{}, false
	}
	return *s.Choices, true
}

// SaveState writes StateFile (0600: it sits beside the credentials).
func (d Dir) SaveState(s State) error {
	return d.WriteJSON(StateFile, s)
}

// State reads StateFile; a missing file says to run up.
func (d Dir) State() (State, error) {
	var s State
	err := d.ReadJSON(StateFile, &s)
	if IsMissing(err) {
		return State{}, clierr.WithNext(noLabError{d.File(StateFile)}, clierr.Step("run '%s' first (or pass --state-dir / --project of the lab you mean)", "up"))
	}
	if err != nil {
		return State{}, d.UnreadableState(err)
	}
	return s, nil
}

// checkState refuses a state file that exists but cannot be read before up
// writes a new one: the record would be lost without a word, and whatever
// cut it short (a full disk, another program) should be known.
func (d Dir) CheckState() error {
	var s State
	if err := d.ReadJSON(StateFile, &s); err != nil && !IsMissing(err) {
		return d.UnreadableState(err)
	}
	return nil
}

// unreadableState is the error of a state file that exists but cannot be
// read: never "missing", and the fix keeps the broken file for a look.
func (d Dir) UnreadableState(err error) error {
	path := d.File(StateFile)
	return clierr.WithNext(fmt.Errorf("lab state %s cannot be used: %w", path, err), clierr.Step(
		fmt.Sprintf("restore it from a backup, or move it away ('mv %s %s.broken') and run '%%s', which records the lab's plan anew (its containers and volumes are kept)", pct(path), pct(path)), "up"))
}

// pct is s as literal text inside a clierr.Next's format.
func pct(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// LeaseEnd is when the node's lease ends, as the lab's choices record it;
// zero when not known (no lab, no choices, or an unreadable state.json:
// the commands that need the lab say why).
func (d Dir) LeaseEnd() time.Time {
	c, _ := d.Choices()
	return c.LeaseEnd
}

// SetLeaseEnd records when the node's lease ends in the lab's choices
// (zero forgets it) and returns the end recorded before. Everything else
// in state.json is kept. A lab whose state.json holds no choices (written
// by join, or by an older mltrain) gets choices holding only the lease: a
// later up without flags plans with the defaults, as it would with none.
func (d Dir) SetLeaseEnd(end time.Time) (time.Time, error) {
	s, err := d.State()
	if err != nil {
		return time.Time{}, err
	}
	if s.Choices == nil {
		s.Choices = &plan.Choices{}
	}
	prev := s.Choices.LeaseEnd
	s.Choices.LeaseEnd = end.UTC()
	if end.IsZero() {
		s.Choices.LeaseEnd = time.Time{}
	}
	if err := d.SaveState(s); err != nil {
		return time.Time{}, fmt.Errorf("record the lease end in %s: %w", d.File(StateFile), err)
	}
	return prev, nil
}
