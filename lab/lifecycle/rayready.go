package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/status"
)

// RayCount is Ray's node list as the lab's worker containers explain it:
// each planned worker counted once, by the node that is its container.
type RayCount struct {
	Heads   int     // ALIVE head nodes (this host's when the nodes span hosts)
	Workers int     // planned workers whose running container has an ALIVE node
	GPUs    float64 // those nodes' GPUs
	// Registering are the planned workers whose running container Ray
	// lists no ALIVE node for yet: the ordinary wait while nodes start.
	Registering []string
	// Problems say why any other planned worker is not counted, and name
	// ALIVE worker nodes no container of the lab has.
	Problems []string
}

// CountRayNodes judges Ray's nodes against the plan's worker containers
// the way verify's ray.nodes check does, through MatchWorkerNodes. A
// replaced worker's old node stays listed: DEAD once its health checks
// fail (RayDeadAfter), and Ray keeps up to maximum_gcs_dead_node_cached_count
// (1000) dead nodes in its table (src/ray/common/ray_config_def.h); until
// then it is ALIVE, at an address (or, across hosts, with labels) the new
// container's node may share. Counting nodes would count that worker twice
// (or count its old node for a new one not yet registered): here DEAD nodes
// never count, a worker counts once by its container, and an ALIVE worker
// node no container has is a problem, as verify says.
func CountRayNodes(p plan.Plan, workers map[string]status.WorkerContainer, nodes []ray.Node) RayCount {
	var rc RayCount
	byID := map[string]ray.Node{}
	for _, n := range nodes {
		byID[n.NodeID] = n
		if n.Alive() && n.IsHeadNode && (p.NodeIP == "" || n.NodeIP == p.NodeIP) {
			rc.Heads++
		}
	}
	pairs, unpaired := status.MatchWorkerNodes(workers, nodes, p.NodeIP)
	paired := map[string]status.WorkerNode{}
	for _, w := range pairs {
		paired[w.Service] = w
	}
	for _, w := range p.Workers {
		wn, ok := paired[w.Service]
		switch {
		case !ok:
			rc.Problems = append(rc.Problems, w.Service+": no container")
		case wn.Stale:
			rc.Problems = append(rc.Problems, status.StaleNote(wn, time.Now()))
		case !wn.Running:
			rc.Problems = append(rc.Problems, fmt.Sprintf("%s: container %s", w.Service, wn.State))
		case wn.RayState != status.RayAlive:
			rc.Registering = append(rc.Registering, w.Service)
		default:
			rc.Workers++
			rc.GPUs += byID[wn.NodeID].GPUs()
		}
	}
	typical, longest := status.RayDeadAfter()
	for _, n := range unpaired {
		rc.Problems = append(rc.Problems, fmt.Sprintf("Ray lists an ALIVE worker node at %s (%s) that no worker container of this lab has: "+
			"a replaced worker's old node, which Ray marks DEAD in ~%s (up to ~%s)", n.NodeIP, n.NodeID, status.Secs(typical), status.Secs(longest)))
	}
	return rc
}

// rayReady is up's Ray check: the dashboard answers with the token, and Ray
// has one ALIVE head and every planned worker's node ALIVE with its GPU,
// counted by CountRayNodes.
func rayReady(eng docker.Engine, project string, c *ray.Client, p plan.Plan) ready.Check {
	wantGPUs := expectedGPUs(p)
	return ready.Check{Name: "ray", Run: func(ctx context.Context) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := c.Version(rctx)
		if err != nil {
			return "", err
		}
		nodes, err := c.Nodes(rctx)
		if err != nil {
			return "", err
		}
		list, err := status.ListWorkers(rctx, eng, project)
		if err != nil {
			return "", err
		}
		workers := map[string]status.WorkerContainer{}
		for _, w := range list {
			workers[w.Labels[labels.Service]] = w
		}
		rc := CountRayNodes(p, workers, nodes)
		if rc.Heads != 1 || rc.Workers != len(p.Workers) || rc.GPUs != wantGPUs || len(rc.Registering)+len(rc.Problems) > 0 {
			msg := fmt.Sprintf("the Ray %s cluster sees %d head(s), %d of %d workers, %g of %g GPUs alive",
				v.RayVersion, rc.Heads, rc.Workers, len(p.Workers), rc.GPUs, wantGPUs)
			// The count says the ordinary wait for nodes to register (a
			// live view's line has room for little more); the rest is named.
			if len(rc.Problems) > 0 {
				msg += ": " + strings.Join(rc.Problems, "; ")
			}
			return "", fmt.Errorf("%s", msg)
		}
		return fmt.Sprintf("Ray %s: 1 head + %d workers ALIVE, %g GPUs", v.RayVersion, rc.Workers, rc.GPUs), nil
	}}
}
