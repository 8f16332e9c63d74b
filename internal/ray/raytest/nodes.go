package raytest

import (
	"time"

	"github.com/mltrain/mltrain/internal/ray"
)

// DefaultDeadAfter is how long Ray 2.54's GCS takes to mark a node DEAD once
// its raylet stops answering without unregistering (killed, crashed, its
// container stopped past the grace period): health_check_failure_threshold
// (5) failed checks health_check_period_ms (3 s) apart, each failing fast
// when the address is gone (src/ray/common/ray_config_def.h,
// gcs_health_check_manager.cc).
const DefaultDeadAfter = 15 * time.Second

// SetNodes sets what /api/v0/nodes lists.
func (s *Server) SetNodes(n []ray.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = append([]ray.Node(nil), n...)
	s.stoppedAt = nil
}

// StopNode says the raylet of the ALIVE node at ip stopped answering now:
// the node list keeps it ALIVE for DeadAfter, then lists it DEAD, as Ray's
// GCS does. It reports whether such a node was listed.
func (s *Server) StopNode(ip string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes {
		if n.NodeIP == ip && n.Alive() {
			if s.stoppedAt == nil {
				s.stoppedAt = map[string]time.Time{}
			}
			if _, ok := s.stoppedAt[n.NodeID]; !ok {
				s.stoppedAt[n.NodeID] = s.Now()
			}
			return true
		}
	}
	return false
}

// currentNodes applies the health checks' verdicts; the lock is held.
func (s *Server) currentNodes() []ray.Node {
	after := s.DeadAfter
	if after == 0 {
		after = DefaultDeadAfter
	}
	for i, n := range s.nodes {
		if at, ok := s.stoppedAt[n.NodeID]; ok && n.Alive() && s.Now().Sub(at) >= after {
			s.nodes[i].State = "DEAD"
			s.nodes[i].StateMessage = "Unexpected termination: health check failed due to missing too many heartbeats"
		}
	}
	return s.nodes
}

// driverNode is where Ray runs a started job's driver: on the head unless
// the entrypoint asks for resources, then on the first ALIVE worker node
// that has them (Ray schedules the entrypoint like a task). A driver on a
// worker dies with that worker, which is why the exercises' Ray Train jobs
// ask for none. With no nodes set (no cluster modelled) it is "node-head".
func (s *Server) driverNode(j *Job) string {
	if j.DriverNodeID != "" {
		return j.DriverNodeID
	}
	if len(s.nodes) == 0 {
		return "node-head"
	}
	r := j.Request
	onHead := r.EntrypointNumGPUs == 0 && len(r.EntrypointResources) == 0
	for _, n := range s.currentNodes() {
		if !n.Alive() {
			continue
		}
		if onHead && n.IsHeadNode || !onHead && !n.IsHeadNode && n.GPUs() >= r.EntrypointNumGPUs {
			j.DriverNodeID = n.NodeID
			return n.NodeID
		}
	}
	return "" // no node can run it: Ray leaves the job PENDING
}
