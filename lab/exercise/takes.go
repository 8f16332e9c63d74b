package exercise

import (
	"fmt"
	"time"

	"github.com/mltrain/mltrain/lab/plan"
)

// Takes is how long an exercise may run on the course's node (one A100
// per Ray worker), start to end, so that a lab that knows its lease can
// refuse one that could not end before the node is wiped. They are upper
// estimates, justified by each exercise's entry in the registry.
type Takes struct {
	Full  time.Duration // with the course's settings (20 epochs)
	Quick time.Duration // with --quick: a few batches per epoch
	// Trains: Full is mostly training and scales with --epochs.
	Trains bool
	// Watches: the exercise watches a job for --observe (Full and Quick
	// count its default, 30 s).
	Watches bool
}

// fullEpochs is train.py's default number of epochs, which Takes.Full counts.
const fullEpochs = 20

// defaultObserve is infeasible's watch, which Takes counts.
const defaultObserve = 30 * time.Second

// Estimate is how long e may take run with o.
func (e Exercise) Estimate(o Options) time.Duration {
	d := e.Takes.Full
	if o.Quick {
		// Quick runs are job and worker start-up, whatever the epochs.
		d = e.Takes.Quick
	} else if e.Takes.Trains && o.Epochs > 0 {
		d = max(e.Takes.Quick, d*time.Duration(o.Epochs)/fullEpochs)
	}
	if e.Takes.Watches && o.Observe > defaultObserve {
		d += o.Observe - defaultObserve
	}
	return d
}

// Estimate is how long the named exercises may take, one after another.
func Estimate(names []string, o Options) time.Duration {
	var d time.Duration
	for _, n := range names {
		if e, ok := Lookup(n); ok {
			d += e.Estimate(o)
		}
	}
	return d
}

// LeaseError is the refusal of exercises that could not end before the
// node's lease does.
type LeaseError struct {
	What  string        // "exercise fault", "every exercise"
	Takes time.Duration // how long it may take as asked
	// QuickTakes is how long it may take with --quick; zero when the run
	// asked was quick already.
	QuickTakes time.Duration
	Lease      plan.Lease
}

func (e *LeaseError) Error() string {
	if e.Lease.Passed {
		return fmt.Sprintf("%s not started: the node's lease %s, and the node may be wiped at any moment", e.What, e.Lease.Left)
	}
	return fmt.Sprintf("%s not started: it may take up to %s and the node's lease %s, so it could not finish before the node is wiped",
		e.What, plan.Span(e.Takes), e.Lease.Left)
}

// QuickFits reports whether the same exercises with --quick would end
// before the lease does.
func (e *LeaseError) QuickFits() bool { return e.QuickTakes > 0 && e.Lease.Fits(e.QuickTakes) }

// CheckLease refuses to start the named exercises (what names them to the
// user) when, run with o, they may not end before lease does; nil lease: no
// lease known, nothing to refuse.
func CheckLease(what string, names []string, o Options, lease *plan.Lease) error {
	if lease == nil {
		return nil
	}
	takes := Estimate(names, o)
	if lease.Fits(takes) {
		return nil
	}
	e := &LeaseError{What: what, Takes: takes, Lease: *lease}
	if !o.Quick {
		q := o
		q.Quick = true
		e.QuickTakes = Estimate(names, q)
	}
	return e
}
