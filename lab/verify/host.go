package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/lab/plan"
)

func hostSpecs() []spec {
	return []spec{
		{id: "host.gpus", group: GroupHost, title: "the lab's GPUs are on this host, in the planned mode", run: checkHostGPUs},
		{id: "host.plumbing", group: GroupHost, title: "the engine can give containers the GPUs", run: checkPlumbing},
	}
}

// modeName is the mode as the course and the report say it.
func modeName(m plan.Mode) string {
	if m == plan.ModeCPU {
		return "rehearsal (CPU only)"
	}
	return string(m)
}

func checkHostGPUs(ctx context.Context, e *env) outcome {
	if e.d.DetectGPUs == nil {
		return fail("report this as an mltrain bug", "no GPU detection configured")
	}
	rep, err := e.d.DetectGPUs(ctx)
	if err != nil {
		return failErr(err, e.cmd("doctor"))
	}
	if rep.HardwareWithoutDriver() {
		var msgs []string
		doctor := e.cmd("doctor")
		fix := doctor
		for _, p := range rep.Problems {
			if p.Code == gpu.CodeNoGPU {
				continue
			}
			msgs = append(msgs, p.Message)
			if p.Fix != "" && fix == doctor {
				fix = p.FixWith(e.cmd)
			}
		}
		return fail(fix, "GPU hardware is present but not usable: %s", strings.Join(msgs, "; "))
	}
	p := e.plan
	if p.Mode == plan.ModeCPU {
		if len(rep.GPUs) > 0 {
			return fail(e.cmd("down")+" && "+e.cmd("up")+" (the lab is planned again with the GPUs)",
				"this host has %s, but the lab was planned as a CPU rehearsal", describe(rep.GPUs))
		}
		return pass("no GPU hardware: mode %s, %d workers with 1 logical GPU each (timings are not GPU results)", modeName(p.Mode), len(p.Workers))
	}
	byUUID := map[string]gpu.GPU{}
	for _, g := range rep.GPUs {
		byUUID[g.UUID] = g
	}
	var missing, assigned []string
	for _, w := range p.Workers {
		if w.GPU == nil {
			missing = append(missing, w.Service+" has no GPU in the plan")
			continue
		}
		if _, ok := byUUID[w.GPU.UUID]; !ok {
			missing = append(missing, fmt.Sprintf("%s's GPU %s (%s) is not detected", w.Service, w.GPU.UUID, w.GPU.Name))
			continue
		}
		assigned = append(assigned, fmt.Sprintf("%s=GPU %d", w.Service, w.GPU.Index))
	}
	if len(missing) > 0 {
		return fail(e.cmd("doctor")+"; if a GPU was replaced, "+e.cmd("down")+" && "+e.cmd("up"),
			"%s; this host has %s", strings.Join(missing, "; "), describeOrNone(rep.GPUs))
	}
	return pass("%s; mode %s: %s", describe(rep.GPUs), modeName(p.Mode), strings.Join(assigned, ", "))
}

func describeOrNone(gs []gpu.GPU) string {
	if len(gs) == 0 {
		return "no GPU"
	}
	return describe(gs)
}

func describe(gs []gpu.GPU) string {
	counts := map[string]int{}
	for _, g := range gs {
		counts[g.Name]++
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%dx %s", counts[n], n)
	}
	return fmt.Sprintf("%d %s GPU(s) (%s)", len(gs), gs[0].Vendor, strings.Join(parts, ", "))
}

func checkPlumbing(ctx context.Context, e *env) outcome {
	p := e.plan
	switch p.Vendor {
	case "":
		return skip("mode %s: workers get no GPU device", modeName(p.Mode))
	case gpu.NVIDIA:
		if e.d.Engine == nil {
			return fail(e.cmd("doctor"), "no Docker engine configured")
		}
		info, err := e.d.Engine.Info(ctx)
		if err != nil {
			return failErr(fmt.Errorf("engine info: %w", err), e.cmd("doctor"))
		}
		if how := info.NVIDIAPlumbing(); how != "" {
			return pass("engine %s has %s", info.ServerVersion, how)
		}
		return fail(doctor.FixNVIDIARuntime, "engine %s has no 'nvidia' runtime (runtimes: %s) and no nvidia.com/gpu CDI devices",
			info.ServerVersion, strings.Join(info.Runtimes, ", "))
	case gpu.AMD:
		if e.d.Access == nil {
			return fail("report this as an mltrain bug", "no device access check configured")
		}
		devs := []string{"/dev/kfd"}
		for _, w := range p.Workers {
			if w.GPU != nil && w.GPU.RenderNode != "" && !contains(devs, w.GPU.RenderNode) {
				devs = append(devs, w.GPU.RenderNode)
			}
		}
		for _, dev := range devs {
			err := e.d.Access(dev)
			switch {
			case err == nil:
			case errors.Is(err, fs.ErrNotExist):
				return fail("sudo modprobe amdgpu; if that fails, reinstall the driver ('sudo amdgpu-install -y --usecase=dkms') and reboot",
					"%s does not exist: the amdgpu driver's devices are missing", dev)
			case errors.Is(err, fs.ErrPermission):
				return fail(doctor.FixAMDGroups, "permission denied on %s", dev)
			default:
				return fail(doctor.FixAMDGroups, "cannot use %s: %v", dev, err)
			}
		}
		return pass("%s exist and are usable", strings.Join(devs, ", "))
	}
	return fail(e.cmd("down")+" && "+e.cmd("up"), "the plan names unknown GPU vendor %q", p.Vendor)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
