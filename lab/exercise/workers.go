package exercise

import (
	"context"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

// workerByIP finds the lab's worker container that is the Ray node with ip.
func (r *runner) workerByIP(ctx context.Context, ip string) (status.WorkerContainer, error) {
	return status.FindWorker(ctx, r.env.Engine, status.WorkerQuery{Project: r.env.Project, IP: ip})
}

// workerOfNode finds the container of the Ray node nodeID (at ip). When the
// lab's nodes span hosts they share their host's address, so the node's
// labels name its container; a node another host runs is not this host's
// to stop, and the error says so.
func (r *runner) workerOfNode(ctx context.Context, nodeID, ip string) (status.WorkerContainer, error) {
	if r.env.NodeIP != "" && nodeID != "" {
		nodes, err := r.env.Ray.Nodes(ctx)
		if err != nil {
			return status.WorkerContainer{}, err
		}
		for _, n := range nodes {
			if n.NodeID != nodeID {
				continue
			}
			if n.NodeIP != r.env.NodeIP {
				return status.WorkerContainer{}, clierr.Hintf("run '"+r.env.Commands.Line("lab", "fault")+"' again: Ray places training on any worker, and when it lands on one of this host's, this host stops it",
					"training runs on node %s at %s, a host that joined the lab: '%s' stops only the workers this host's Docker engine runs", n.NodeID, n.NodeIP, r.env.Commands.Line("lab", "fault"))
			}
			if idx, ok := service.WorkerIndexOf(n.Labels[labels.RayNodeService]); ok {
				return status.FindWorker(ctx, r.env.Engine, status.WorkerQuery{Project: r.env.Project, Index: &idx})
			}
		}
	}
	return r.workerByIP(ctx, ip)
}

// workerNames maps node IPs to container names, best effort (for reports).
func (r *runner) workerNames(ctx context.Context, ips []string) map[string]string {
	out := map[string]string{}
	if r.env.Engine == nil {
		return out
	}
	ws, err := status.ListWorkers(ctx, r.env.Engine, r.env.Project)
	if err != nil {
		return out
	}
	for _, ip := range ips {
		for _, w := range ws {
			for _, a := range w.IPs() {
				if a == ip {
					out[ip] = w.Name
				}
			}
		}
	}
	return out
}
