package plan

import (
	"errors"
	"fmt"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/service"
)

// checkDevicesAndDriver refuses a lab whose workers could not use their GPU:
// an AMD host whose render group is unknown, or a driver too old for the
// worker image's CUDA/ROCm. Softer driver findings become warnings.
func checkDevicesAndDriver(p *Plan, facts host.Facts, opts Options) error {
	if p.Vendor == gpu.AMD && p.RenderGID == 0 {
		// Dockerfile.ray-rocm ends with USER ray: without the group owning
		// /dev/dri/renderD* the worker cannot open its GPU and sees none.
		return clierr.WithNext(fmt.Errorf("the host's render group id is unknown: the ROCm workers run as user ray and could not open /dev/dri/renderD* (%s)", p.Workers[0].GPU.RenderNode),
			clierr.Next{Text: "give the group that owns the render nodes on the lab host ('stat -c %%g /dev/dri/renderD128' there): " +
				"%s; on the host itself, check that /dev/dri/renderD* exists and its group is in /etc/group, then '%s'",
				Commands: [][]string{{"render", "--render-gid", "GID"}, {"doctor"}}})
	}
	if _, custom := opts.Images[service.RoleWorker]; custom {
		// A replaced worker image carries its own CUDA/ROCm; the fix for a
		// too-old driver even suggests one, so it is not held to ours.
		return nil
	}
	for _, pr := range gpu.CheckDriver(facts.GPUs, dockerfiles.DriverNeed()) {
		if !pr.Warning() {
			return clierr.WithNext(errors.New(pr.Message), pr.AsNext())
		}
		if pr.Code != gpu.CodeDriverUnchecked {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s (%s)", pr.Message, pr.Fix))
		}
	}
	return nil
}
