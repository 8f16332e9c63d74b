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

// Pinned third-party images (never "latest": a lab must be reproducible).
const (
	MinIOImage      = "minio/minio:RELEASE.2025-09-07T16-13-09Z"
	PrometheusImage = "prom/prometheus:v3.5.0"
	GrafanaImage    = "grafana/grafana:12.1.1"
)
