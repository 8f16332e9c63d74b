package lifecycle

import (
	"net/http"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// ReadyChecks are the probes that prove the lab ready, what verify's live
// checks read: every planned container running and healthy as the engine
// says, Ray sees the head and each worker's own node with its GPU (with the
// token), every service's readiness probe answers (the service table's),
// and Prometheus scrapes every Ray node.
func ReadyChecks(c state.Clients, eng docker.Engine, project string) []ready.Check {
	checks := []ready.Check{
		ready.Healthy(eng, project, c.Plan.Services()),
		rayReady(eng, project, c.Ray, c.Plan),
	}
	for _, s := range service.All {
		if s.Ready == nil {
			continue
		}
		var hdr http.Header
		if s.Ready.JupyterToken {
			hdr = http.Header{"Authorization": {"token " + c.Creds.JupyterToken}}
		}
		checks = append(checks, ready.HTTP(s.Name, c.Plan.ProbeURL(s.Ready.Port)+s.Ready.Path, hdr))
	}
	return append(checks, scrapesReady(c.Ray, c.Probes.Prometheus))
}

// expectedGPUs is the GPU total Ray must report: every worker advertises
// one, its own, its half of a shared one (as one logical GPU each), or a
// logical one in CPU rehearsal.
func expectedGPUs(p plan.Plan) float64 { return float64(len(p.Workers)) }
