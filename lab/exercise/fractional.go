package exercise

import (
	"context"
	"fmt"
	"sort"
	"time"
)

type interval struct {
	job, node string
	from, to  time.Time
}

// maxOverlap is the most intervals open at one instant.
func maxOverlap(iv []interval) int {
	type edge struct {
		t     time.Time
		delta int
	}
	var es []edge
	for _, v := range iv {
		es = append(es, edge{v.from, 1}, edge{v.to, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].t.Equal(es[j].t) {
			return es[i].delta < es[j].delta // an end before a start at the same instant
		}
		return es[i].t.Before(es[j].t)
	})
	cur, max := 0, 0
	for _, e := range es {
		cur += e.delta
		if cur > max {
			max = cur
		}
	}
	return max
}

// sharedNode returns a node on which two jobs trained at the same time.
func sharedNode(iv []interval) string {
	for a := 0; a < len(iv); a++ {
		for b := a + 1; b < len(iv); b++ {
			if iv[a].node != "" && iv[a].node == iv[b].node && iv[a].from.Before(iv[b].to) && iv[b].from.Before(iv[a].to) {
				return iv[a].node
			}
		}
	}
	return ""
}

func runFractional(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "ray", "--workers", "1", "--gpu-fraction", "0.5", "--cpus-per-worker", fmt.Sprint(r.cpus()))
	obs := &FractionalObs{JobsByNode: map[string][]string{}}
	r.rec.Fractional = obs
	r.say("first one job alone, for the baseline")
	alone, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return err
	}
	r.look(r.env.Ray.Address()+"/#/jobs", r.dashboard("/#/cluster"))
	if _, err := r.wait(ctx, alone); err != nil {
		return err
	}
	obs.AloneSeconds = r.rec.Jobs[alone].Seconds

	var idx []int
	for k := 0; k < 3; k++ {
		i, err := r.submit(ctx, jobSpec{args: args, runName: true})
		if err != nil {
			return err
		}
		idx = append(idx, i)
	}
	var ivs []interval
	var first, last time.Time
	for _, i := range idx {
		if _, err := r.wait(ctx, i); err != nil {
			return err
		}
		jr := r.rec.Jobs[i]
		if first.IsZero() || jr.Start.Before(first) {
			first = jr.Start
		}
		if jr.End.After(last) {
			last = jr.End
		}
	}
	var ips []string
	for _, i := range idx {
		ips = append(ips, r.rec.Jobs[i].NodeIPs...)
	}
	names := r.workerNames(ctx, ips)
	for _, i := range idx {
		jr := r.rec.Jobs[i]
		ws := EventsOf(r.events[i], "worker")
		if len(ws) == 0 {
			r.problem("job %s reported no training worker: cannot tell which GPU ran it", jr.SubmissionID)
			continue
		}
		w := ws[len(ws)-1]
		node := w.nodeKey()
		if n, ok := names[w.NodeIP]; ok && r.env.NodeIP == "" {
			node = n // one host: the address names the container
		}
		obs.JobsByNode[node] = append(obs.JobsByNode[node], jr.SubmissionID)
		ivs = append(ivs, interval{job: jr.SubmissionID, node: node, from: w.At(), to: jr.End})
	}
	obs.MakespanSeconds = last.Sub(first).Seconds()
	if obs.AloneSeconds > 0 {
		obs.Ratio = obs.MakespanSeconds / obs.AloneSeconds
	}
	obs.MaxConcurrent = maxOverlap(ivs)
	obs.SharedNode = sharedNode(ivs)
	r.number("one job alone", obs.AloneSeconds, "s")
	r.number("three jobs at once (makespan)", obs.MakespanSeconds, "s")
	r.number("makespan / one alone", obs.Ratio, "x")
	r.number("jobs training at the same time", float64(obs.MaxConcurrent), "")
	r.rec.Observed = fmt.Sprintf("3 jobs at 0.5 GPU: makespan %.0fs vs %.0fs for one alone (%.2fx); up to %d training at once; %s",
		obs.MakespanSeconds, obs.AloneSeconds, obs.Ratio, obs.MaxConcurrent, obs.ByNode())
	return nil
}
