package raymodel

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Alloc is resources the scheduler handed out on one node: a job
// supervisor's entrypoint resources, a Train worker's bundle, a Tune trial.
type Alloc struct {
	NodeID, NodeIP string
	Res            Resources
	gpu            []int // GPU instances used (a fraction uses one)
	node           *node
	lost           bool
}

// Lost reports whether the allocation's node stopped answering: what ran
// there died with it.
func (a *Alloc) Lost() bool { return a.lost }

// demand is a resource request nothing can run yet, for the cluster status.
type demand struct {
	bundles  []Resources
	strategy string // "" for a task/actor
}

const eps = 1e-9

// fitGPU finds GPU instances of n for amount: a fraction goes to the
// fullest instance it still fits on (fractions pack), whole GPUs to free
// instances (src/ray/common/scheduling/resource_instance_set.cc).
func fitGPU(n *node, amount float64) ([]int, bool) {
	if amount <= 0 {
		return nil, true
	}
	if amount < 1 {
		best := -1
		for i, u := range n.gpus {
			if 1-u+eps >= amount && (best < 0 || u > n.gpus[best]) {
				best = i
			}
		}
		return []int{best}, best >= 0
	}
	var free []int
	for i, u := range n.gpus {
		if u < eps && len(free) < int(amount) {
			free = append(free, i)
		}
	}
	return free, float64(len(free))+eps >= amount
}

func fits(n *node, req Resources) bool {
	if n.state != "ALIVE" || !n.silent.IsZero() {
		return false
	}
	for k, v := range req {
		if v > 0 && n.Total[k]-n.used[k]+eps < v {
			return false
		}
	}
	_, ok := fitGPU(n, req["GPU"])
	return ok
}

// feasible: some ALIVE node could hold req were it idle.
func (c *Cluster) feasible(req Resources) bool {
	for _, n := range c.node {
		if n.state != "ALIVE" {
			continue
		}
		ok := true
		for k, v := range req {
			if v > 0 && n.Total[k]+eps < v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// score is the hybrid policy's: the node's most-used resource, 0 below the
// spread threshold (src/ray/raylet/scheduling/policy/hybrid_scheduling_policy.cc).
func (c *Cluster) score(n *node) float64 {
	worst := 0.0
	for k, t := range n.Total {
		if t > 0 {
			worst = math.Max(worst, n.used[k]/t)
		}
	}
	if worst < c.cfg.SpreadThreshold {
		return 0
	}
	return worst
}

// acquire places req by the hybrid policy: the lowest score wins, ties go
// to the first node in order (the head, the driver's local node, first).
// only, when set, limits the candidates (the head-node label selector of a
// job without entrypoint resources).
func (c *Cluster) acquire(req Resources, only func(*node) bool) (*Alloc, bool) {
	var best *node
	for _, n := range c.node {
		if (only != nil && !only(n)) || !fits(n, req) {
			continue
		}
		if best == nil || c.score(n) < c.score(best) {
			best = n
		}
	}
	if best == nil {
		return nil, false
	}
	return c.take(best, req), true
}

func (c *Cluster) take(n *node, req Resources) *Alloc {
	gpu, _ := fitGPU(n, req["GPU"])
	a := &Alloc{NodeID: n.ID, NodeIP: n.IP, Res: copyRes(req), gpu: gpu, node: n}
	for k, v := range req {
		n.used[k] += v
	}
	for _, i := range gpu {
		if req["GPU"] < 1 {
			n.gpus[i] += req["GPU"]
		} else {
			n.gpus[i] = 1
		}
	}
	return a
}

// acquireGroup places a placement group's bundles all at once or not at
// all: PACK tries one node first, then spreads what does not fit
// (gcs_placement_group_scheduler, the Train V2 default strategy is PACK).
func (c *Cluster) acquireGroup(bundles []Resources) ([]*Alloc, bool) {
	sum := Resources{}
	for _, b := range bundles {
		for k, v := range b {
			sum[k] += v
		}
	}
	var got []*Alloc
	if a, ok := c.acquire(sum, nil); ok {
		if len(bundles) == 1 {
			return []*Alloc{a}, true
		}
		n := a.node // release forgets it
		c.release(a)
		for _, b := range bundles {
			got = append(got, c.take(n, b))
		}
		return got, true
	}
	for _, b := range bundles {
		a, ok := c.acquire(b, nil)
		if !ok {
			for _, g := range got {
				c.release(g)
			}
			return nil, false
		}
		got = append(got, a)
	}
	return got, true
}

func (c *Cluster) release(a *Alloc) {
	if a == nil || a.node == nil {
		return
	}
	n := a.node
	for k, v := range a.Res {
		n.used[k] = math.Max(0, n.used[k]-v)
	}
	for _, i := range a.gpu {
		if a.Res["GPU"] < 1 {
			n.gpus[i] = math.Max(0, n.gpus[i]-a.Res["GPU"])
		} else {
			n.gpus[i] = 0
		}
	}
	a.node = nil
}

// lost marks every allocation on n lost (its raylet stopped).
func (c *Cluster) lost(n *node) {
	for _, j := range c.jobs {
		for _, a := range j.allocs() {
			if a.node == n {
				a.lost = true
			}
		}
	}
}

// ClusterStatus is the text of GET /api/cluster_status?format=1 (what
// `ray status` prints), in the legacy autoscaler's layout a plain
// `ray start --head` cluster reports: usage, then the demands nothing can
// run now, each a task/actor or a placement group.
func (c *Cluster) ClusterStatus() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	var b strings.Builder
	fmt.Fprintf(&b, "======== Autoscaler status: %s ========\nNode status\n%s\nActive:\n", c.now().Format("2006-01-02 15:04:05.000000"), strings.Repeat("-", 63))
	total, used := Resources{}, Resources{}
	for _, n := range c.node {
		if n.state != "ALIVE" {
			continue
		}
		fmt.Fprintf(&b, " 1 node_%s\n", n.ID)
		for k, v := range n.Total {
			total[k] += v
			used[k] += n.used[k]
		}
	}
	fmt.Fprintf(&b, "Pending:\n (no pending nodes)\nRecent failures:\n (no failures)\n\nResources\n%s\nUsage:\n", strings.Repeat("-", 63))
	for _, k := range sortedKeys(total) {
		fmt.Fprintf(&b, " %.1f/%.1f %s\n", used[k], total[k], k)
	}
	b.WriteString("\nDemands:\n")
	ds := c.demands()
	if len(ds) == 0 {
		b.WriteString(" (no resource demands)\n")
	}
	for _, d := range ds {
		if d.strategy == "" {
			fmt.Fprintf(&b, " %s: 1+ pending tasks/actors\n", pyDict(d.bundles[0]))
			continue
		}
		var parts []string
		for _, x := range d.bundles {
			parts = append(parts, pyDict(x))
		}
		fmt.Fprintf(&b, " [%s] (%s): 1+ pending placement groups\n", strings.Join(parts, ", "), d.strategy)
	}
	return b.String()
}

func pyDict(r Resources) string {
	var parts []string
	for _, k := range sortedKeys(r) {
		if r[k] > 0 {
			parts = append(parts, fmt.Sprintf("'%s': %.1f", k, r[k]))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// since is now - t, or 0 for a zero t.
func since(now, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return now.Sub(t)
}
