package exercise

import (
	"context"
	"fmt"
	"time"
)

// waitSay is the longest an exercise waits without a line: each wait says
// what it waits for and for how long so far, of what limit, at least this
// often (issue 31: no exercise wait is silent).
const waitSay = 15 * time.Second

// waitLine is one wait's periodic line.
type waitLine struct {
	r     *runner
	what  string
	start time.Time
	limit time.Duration // 0: no limit known
}

// waiting starts the periodic line of a wait for what; the limit is ctx's
// deadline, when it has one.
func (r *runner) waiting(ctx context.Context, what string) *waitLine {
	w := &waitLine{r: r, what: what, start: r.env.Now()}
	if d, ok := ctx.Deadline(); ok {
		w.limit = time.Until(d).Round(time.Second)
	}
	return w
}

// tick says the line when nothing was said for waitSay; detail is what the
// wait sees now (a job's status).
func (w *waitLine) tick(detail string) {
	now := w.r.env.Now()
	if now.Sub(w.r.lastSaid) < waitSay {
		return
	}
	line := fmt.Sprintf("waiting for %s: %s so far", w.what, now.Sub(w.start).Round(time.Second))
	if w.limit > 0 {
		line += fmt.Sprintf(" of at most %s", w.limit)
	}
	if detail != "" {
		line += "; " + detail
	}
	w.r.say("%s", line)
}

// await says the exercise now waits for what; the job-log polls that follow
// (runner.poll) repeat it with the time so far.
func (r *runner) await(what string) {
	r.awaiting = what
	r.say("waiting for %s", what)
}
