package status

import (
	"fmt"
	"sort"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
)

// Ray's GCS health checks of every node's raylet, with Ray 2.54's defaults
// (src/ray/common/ray_config_def.h: health_check_period_ms,
// health_check_timeout_ms, health_check_failure_threshold). A raylet that
// stops answering without unregistering (killed, crashed, its container
// stopped past the grace period) keeps its node ALIVE in Ray's node list
// until that many checks in a row have failed.
const (
	RayHealthCheckPeriod   = 3 * time.Second
	RayHealthCheckTimeout  = 10 * time.Second
	RayHealthCheckFailures = 5
)

// RayDeadAfter is how long Ray keeps listing a silent node ALIVE: about
// failures x period when each check fails at once (the container's address
// is gone), at most failures x (period + timeout) when each check waits out
// its timeout (gcs_health_check_manager.cc).
func RayDeadAfter() (typical, longest time.Duration) {
	return RayHealthCheckFailures * RayHealthCheckPeriod, RayHealthCheckFailures * (RayHealthCheckPeriod + RayHealthCheckTimeout)
}

// Ray states of a worker's node, beside Ray's own ALIVE and DEAD.
const (
	RayAlive    = "ALIVE"
	RayAbsent   = "absent"    // a running container whose address Ray does not list
	RayNotAlive = "not ALIVE" // a stopped container: Ray lists no ALIVE node that can be its
)

// WorkerNode is one worker container beside the Ray node that is it.
type WorkerNode struct {
	Service string
	Index   int
	docker.ContainerDetails
	IP     string // its address while it runs
	NodeIP string // the address of the Ray node paired with it ("" when none)
	NodeID string // that node's id
	// RayState is ALIVE or DEAD as Ray lists the node, RayAbsent, or
	// RayNotAlive.
	RayState string
	// Stale: the container is not running, yet Ray still lists its node
	// ALIVE (its health checks have not failed enough yet).
	Stale bool
}

// MatchWorkerNodes pairs worker containers (by service) with Ray's nodes.
// A running container is its address's node. A stopped one has no address
// on a real engine, so the ALIVE worker nodes no running container has are
// the stopped containers' nodes Ray has not yet marked DEAD: they are paired
// with the stopped containers in service order (exactly when one worker is
// down). It returns the pairs and the ALIVE worker nodes left unpaired.
//
// nodeIP is this host's node address when the nodes span hosts (host
// networking): there the nodes' labels, not addresses, say which container
// a node is, and nodes of other hosts are never this host's.
func MatchWorkerNodes(workers map[string]WorkerContainer, nodes []ray.Node, nodeIP string) ([]WorkerNode, []ray.Node) {
	byIP := map[string]ray.Node{}
	for _, n := range nodes {
		if old, ok := byIP[n.NodeIP]; !ok || !old.Alive() { // a restarted worker keeps its IP: ALIVE wins
			byIP[n.NodeIP] = n
		}
	}
	services := make([]string, 0, len(workers))
	for s := range workers {
		services = append(services, s)
	}
	sort.Strings(services)
	claimed, claimedID := map[string]bool{}, map[string]bool{}
	labelled := map[string]ray.Node{} // lab/service -> its node, ALIVE ones winning
	for _, n := range nodes {
		lab, svc := n.Labels[labels.RayNodeLab], n.Labels[labels.RayNodeService]
		key := n.NodeIP + "/" + lab + "/" + svc
		if old, ok := labelled[key]; svc != "" && (!ok || !old.Alive()) {
			labelled[key] = n
		}
	}
	var out []WorkerNode
	var down []int
	for _, s := range services {
		w := workers[s]
		wn := WorkerNode{Service: s, Index: w.Index, ContainerDetails: w.ContainerDetails}
		ips := w.IPs()
		if len(ips) > 0 {
			wn.IP = ips[0]
		}
		if n, ok := labelled[nodeIP+"/"+w.Project+"/"+s]; ok && nodeIP != "" {
			// On a host network the address is the host's: the node's
			// labels say which container it is.
			claimedID[n.NodeID] = true
			wn.RayState, wn.NodeIP, wn.NodeID = n.State, n.NodeIP, n.NodeID
			wn.Stale = !w.Running && n.Alive()
		} else if n, ok := byIP[wn.IP]; ok && wn.IP != "" {
			claimed[wn.IP] = true
			wn.RayState, wn.NodeIP, wn.NodeID = n.State, n.NodeIP, n.NodeID
		}
		switch {
		case w.Running && wn.RayState == "":
			wn.RayState = RayAbsent
		case !w.Running && wn.RayState == RayAlive:
			wn.Stale = true // an engine that still reports the stopped container's address
		case !w.Running && wn.RayState == "":
			down = append(down, len(out))
		case !w.Running && wn.RayState != RayAlive:
			wn.RayState = RayNotAlive
		}
		out = append(out, wn)
	}
	var unpaired []ray.Node
	for _, n := range nodes {
		if n.Alive() && !n.IsHeadNode && !claimed[n.NodeIP] && !claimedID[n.NodeID] && (nodeIP == "" || n.NodeIP == nodeIP) {
			unpaired = append(unpaired, n)
		}
	}
	sort.Slice(unpaired, func(i, j int) bool { return unpaired[i].NodeIP < unpaired[j].NodeIP })
	for _, i := range down {
		if len(unpaired) == 0 {
			out[i].RayState = RayNotAlive
			continue
		}
		out[i].RayState, out[i].Stale, out[i].NodeIP, out[i].NodeID = RayAlive, true, unpaired[0].NodeIP, unpaired[0].NodeID
		unpaired = unpaired[1:]
	}
	return out, unpaired
}

// RayCount says how many of the lab's current nodes Ray lists ALIVE. Ray's
// GCS keeps DEAD nodes in its node list (up to
// maximum_gcs_dead_node_cached_count, 1000), so after a worker restart the
// old node stays there DEAD beside the new ALIVE one: such history is
// counted apart, not as nodes missing now. A stopped worker's node is
// current, ALIVE or DEAD: each stopped worker Ray no longer lists ALIVE
// keeps one DEAD node among the current ones.
func RayCount(nodes []ray.Node, pairs []WorkerNode) string {
	alive, dead := 0, 0
	for _, n := range nodes {
		if n.Alive() {
			alive++
		} else {
			dead++
		}
	}
	down := 0
	for _, w := range pairs {
		if !w.Running && w.RayState != RayAlive {
			down++
		}
	}
	history := max(0, dead-down)
	s := fmt.Sprintf("%d of %d nodes ALIVE", alive, len(nodes)-history)
	if history > 0 {
		s += fmt.Sprintf(" (%d DEAD from earlier restarts)", history)
	}
	return s
}

// StaleNote says why Ray lists a stopped worker's node ALIVE.
func StaleNote(w WorkerNode, now time.Time) string {
	typical, longest := RayDeadAfter()
	since := ""
	if !w.FinishedAt.IsZero() && now.After(w.FinishedAt) {
		since = fmt.Sprintf(" %s ago", now.Sub(w.FinishedAt).Round(time.Second))
	}
	return fmt.Sprintf("%s: container %s%s; Ray still lists the node ALIVE: it marks it DEAD after its health checks time out, ~%s (up to ~%s)",
		w.Service, w.State, since, Secs(typical), Secs(longest))
}

func Secs(d time.Duration) string { return fmt.Sprintf("%.0fs", d.Seconds()) }
