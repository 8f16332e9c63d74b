package lab

import (
	"fmt"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/gpu"
)

// DefaultImage is the image a role runs unless Options.Images replaces it.
// Workers get the CUDA image on NVIDIA hosts and in CPU rehearsal (its
// PyTorch runs on CPU too), the ROCm image on AMD hosts.
func DefaultImage(r Role, rayVersion string, vendor gpu.Vendor) (string, error) {
	switch r {
	case RoleHead, RoleWorker:
		// The head runs the workers' image: job drivers run on the head
		// (so stopping a worker in the fault exercise never kills them),
		// and a Ray Train / Tune driver imports torch and lightning, which
		// rayproject/ray lacks. One image also means one Python and one Ray
		// on every node. The head gets no GPU whatever its image.
		if vendor == gpu.AMD {
			return dockerfiles.Ref(dockerfiles.RayROCm, rayVersion)
		}
		return dockerfiles.Ref(dockerfiles.RayCUDA, rayVersion)
	case RoleJupyter:
		return dockerfiles.Ref(dockerfiles.JupyterRay, rayVersion)
	case RoleMinIO:
		return MinIOImage, nil
	case RolePrometheus:
		return PrometheusImage, nil
	case RoleGrafana:
		return GrafanaImage, nil
	}
	return "", fmt.Errorf("no default image for role %q", r)
}

// DefaultHealthcheck is each role's Docker healthcheck test. All are exec
// form (no shell), using only tools the pinned images ship: the ray CLI,
// MinIO's bundled mc, busybox wget in Prometheus and Grafana, wget in the
// Jupyter image. Tests replace them through Options.Healthchecks.
func DefaultHealthcheck(r Role) []string {
	switch r {
	case RoleHead:
		// GCS reachable and healthy; the token comes from RAY_AUTH_TOKEN.
		return []string{"CMD", "ray", "health-check"}
	case RoleWorker:
		// This node's view of the GCS: fails while the worker cannot join.
		return []string{"CMD", "ray", "health-check", "--address", HeadService + ":6379"}
	case RoleMinIO:
		return []string{"CMD", "mc", "ready", "local"}
	case RolePrometheus:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:9090/-/ready"}
	case RoleGrafana:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:3000/api/health"}
	case RoleJupyter:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8888/api"}
	}
	return nil
}
