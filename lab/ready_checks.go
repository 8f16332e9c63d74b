package lab

import (
	"net/http"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/lab/ready"
)

// ReadyChecks are the probes that prove the lab ready, what verify's live
// checks read: every planned container running and healthy as the engine
// says, Ray sees the head and each worker's own node with its GPU (with the
// token), and every service answers.
func (c Clients) ReadyChecks(eng docker.Engine, project string) []ready.Check {
	return []ready.Check{
		ready.Healthy(eng, project, c.Plan.Services()),
		rayReady(eng, project, c.Ray, c.Plan),
		ready.HTTP("minio", c.Probes.MinIO+"/minio/health/ready", nil),
		ready.HTTP("grafana", c.Probes.Grafana+"/api/health", nil),
		ready.HTTP("prometheus", c.Probes.Prometheus+"/-/ready", nil),
		scrapesReady(c.Ray, c.Probes.Prometheus),
		ready.HTTP("jupyter", c.Probes.Jupyter+"/api", http.Header{"Authorization": {"token " + c.Creds.JupyterToken}}),
	}
}

// expectedGPUs is the GPU total Ray must report: every worker advertises
// one, its own, its half of a shared one (as one logical GPU each), or a
// logical one in CPU rehearsal.
func expectedGPUs(p Plan) float64 { return float64(len(p.Workers)) }
