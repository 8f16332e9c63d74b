package lab

import (
	"fmt"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/gpu"
)

// PythonTag is the rayproject/ray tag suffix matching the Python of
// mltrain's worker and Jupyter images (dockerfiles/Dockerfile.*).
const PythonTag = "py312"

// DefaultImage is the image a role runs unless Options.Images replaces it.
// Workers get the CUDA image on NVIDIA hosts and in CPU rehearsal (its
// PyTorch runs on CPU too), the ROCm image on AMD hosts.
func DefaultImage(r Role, rayVersion string, vendor gpu.Vendor) (string, error) {
	switch r {
	case RoleHead:
		// Same Python as the workers and Jupyter (their Dockerfiles pin
		// -py312): Ray refuses nodes and drivers of another Python, and
		// rayproject/ray's untagged default is 3.10.
		return "rayproject/ray:" + rayVersion + "-" + PythonTag, nil
	case RoleWorker:
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
