package exercise

import (
	"context"

	"github.com/mltrain/mltrain/lab"
)

// workerByIP finds the lab's worker container that is the Ray node with ip.
func (r *runner) workerByIP(ctx context.Context, ip string) (lab.WorkerContainer, error) {
	return lab.FindWorker(ctx, r.env.Engine, lab.WorkerQuery{Project: r.env.Project, IP: ip})
}

// workerNames maps node IPs to container names, best effort (for reports).
func (r *runner) workerNames(ctx context.Context, ips []string) map[string]string {
	out := map[string]string{}
	if r.env.Engine == nil {
		return out
	}
	ws, err := lab.ListWorkers(ctx, r.env.Engine, r.env.Project)
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
