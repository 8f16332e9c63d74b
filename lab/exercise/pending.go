package exercise

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
)

// pendingSay is how long a job may stay PENDING before the exercise says
// why, and how often it says so again: no wait is silent.
const pendingSay = 10 * time.Second

// pendingWatch explains a job that stays PENDING: Ray's pending demands
// beside the resources of its ALIVE nodes, every pendingSay.
type pendingWatch struct {
	r        *runner
	limit    time.Duration // how long the exercise waits for the job
	since    time.Time     // first seen PENDING
	lastSaid time.Time
}

func (w *pendingWatch) poll(ctx context.Context, j ray.Job) {
	now := w.r.env.Now()
	if j.Status != ray.Pending {
		w.since = time.Time{}
		return
	}
	if w.since.IsZero() {
		w.since = now
	}
	if now.Sub(w.since) < pendingSay || now.Sub(w.lastSaid) < pendingSay {
		return
	}
	w.lastSaid = now
	w.r.say("%s PENDING for %s: %s; waiting at most %s for it to end", j.SubmissionID, now.Sub(w.since).Round(time.Second), whyPending(ctx, w.r.env.Ray), w.limit)
}

// whyPending says what Ray cannot place and what its nodes have, as far as
// Ray tells; best effort.
func whyPending(ctx context.Context, c *ray.Client) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var parts []string
	if status, err := c.ClusterStatus(ctx); err == nil {
		var ds []string
		for _, d := range ray.ParseDemands(status) {
			ds = append(ds, d.Line)
		}
		if len(ds) > 0 {
			parts = append(parts, "Ray's pending demand "+strings.Join(ds, "; "))
		}
	}
	if nodes, err := c.Nodes(ctx); err == nil {
		var ns []string
		for _, n := range nodes {
			if n.Alive() {
				ns = append(ns, fmt.Sprintf("%s %g CPU %g GPU", nodeName(n), n.ResourcesTotal["CPU"], n.GPUs()))
			}
		}
		sort.Strings(ns)
		parts = append(parts, "ALIVE nodes: "+strings.Join(ns, ", "))
	}
	if len(parts) == 0 {
		return "Ray says nothing of why (its cluster status and node list did not answer)"
	}
	return strings.Join(parts, "; ")
}

func nodeName(n ray.Node) string {
	if n.IsHeadNode {
		return "head"
	}
	return n.NodeIP
}

// endOpenJobs ends the jobs an interrupted exercise leaves running or
// PENDING in Ray, and says so; a job it cannot end is named with the
// command that does. ctx is not the interrupted one.
func (r *runner) endOpenJobs(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var said []string
	for _, jr := range r.rec.Jobs {
		j, err := r.env.Ray.Job(ctx, jr.SubmissionID)
		if err != nil || j.Status.Terminal() {
			continue
		}
		var obs InfeasibleObs
		if _, err := r.endUnplaced(ctx, j, &obs); err != nil {
			how := fmt.Sprintf("with 'ray job stop %s --address %s'", jr.SubmissionID, r.env.Ray.Address())
			if j.Status == ray.Pending {
				// A supervisor Ray never placed may outlive 'ray job stop'
				// (the ledger's job_manager.py rows); killing it always ends the job.
				how = fmt.Sprintf("by killing its supervisor actor %s on the dashboard's Actors page (%s/#/actors)",
					ray.SupervisorActorName(jr.SubmissionID), r.env.Ray.Address())
			}
			said = append(said, fmt.Sprintf("job %s is still %s in Ray: end it %s (%v)", jr.SubmissionID, j.Status, how, err))
			continue
		}
		said = append(said, fmt.Sprintf("job %s was %s in Ray: ended it by %s", jr.SubmissionID, j.Status, obs.EndedBy))
	}
	return strings.Join(said, "; ")
}

// interrupted is the error of an exercise a signal stopped: its open jobs
// are ended (or named), and a re-run starts the exercise over.
func (r *runner) interrupted(ctx context.Context, err error) error {
	err = clierr.Mark(err, clierr.ErrStartsOver)
	if note := r.endOpenJobs(context.WithoutCancel(ctx)); note != "" {
		return clierr.WithHint(err, note)
	}
	return err
}
