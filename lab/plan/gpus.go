package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/lab/service"
)

// usableGPUs validates the report and drops GPUs the lab cannot use.
func usableGPUs(r gpu.Report) ([]gpu.GPU, []string, error) {
	if r.HardwareWithoutDriver() {
		var msgs []string
		var first *gpu.Problem // the first problem, whose own fix comes first
		for _, pr := range r.Problems {
			if pr.Code == gpu.CodeNoGPU {
				continue
			}
			msgs = append(msgs, pr.Message)
			if first == nil && pr.Fix != "" {
				first = &pr
			}
		}
		next := clierr.Step("run '%s' for the full diagnosis", "doctor")
		if first != nil {
			next = first.AsNext().Then("; then run '%s'", "doctor")
		}
		return nil, nil, clierr.WithNext(fmt.Errorf("GPU hardware is present but not usable (%s); mltrain will not fall back to a CPU lab on a GPU host",
			strings.Join(msgs, "; ")), next)
	}
	gpus := append([]gpu.GPU(nil), r.GPUs...)
	sort.SliceStable(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	var warns []string
	var out []gpu.GPU
	seen := map[string]int{}
	for _, g := range gpus {
		id := fmt.Sprintf("GPU %d (%s)", g.Index, g.Name)
		switch g.Vendor {
		case gpu.NVIDIA:
			if g.UUID == "" {
				return nil, nil, clierr.Hintf("regenerate the list with 'mltrain gpus --json' on the lab host", "%s: an NVIDIA GPU without a UUID cannot be given to one worker", id)
			}
		case gpu.AMD:
			if !renderNodeRE.MatchString(g.RenderNode) {
				return nil, nil, clierr.Hintf("regenerate the list with 'mltrain gpus --json' on the lab host", "%s: AMD GPU render node %q is not /dev/dri/renderD<N>", id, g.RenderNode)
			}
		default:
			return nil, nil, clierr.Hintf("mltrain supports vendors \"nvidia\" and \"amd\"; regenerate the list with 'mltrain gpus --json'", "%s: unknown GPU vendor %q", id, g.Vendor)
		}
		if g.Vendor != gpus[0].Vendor {
			return nil, nil, clierr.Hintf("a lab uses one vendor's GPUs; remove the others from the list", "mixed GPU vendors (%s and %s): one worker image cannot serve both", gpus[0].Vendor, g.Vendor)
		}
		for _, key := range []string{"uuid:" + g.UUID, "pci:" + g.PCIBusID, "render:" + g.RenderNode} {
			if strings.HasSuffix(key, ":") {
				continue
			}
			if prev, dup := seen[key]; dup {
				return nil, nil, clierr.Hintf("regenerate the list with 'mltrain gpus --json' on the lab host",
					"GPU %d and GPU %d are the same device (%s): it would be given to two workers", prev, g.Index, key)
			}
			seen[key] = g.Index
		}
		if g.MIG {
			warns = append(warns, fmt.Sprintf("%s has MIG mode on and is not used (disable it with 'sudo nvidia-smi -i %d -mig 0')", id, g.Index))
			continue
		}
		out = append(out, g)
	}
	if len(gpus) > 0 && len(out) == 0 {
		return nil, nil, clierr.Hintf(fmt.Sprintf("disable MIG with 'sudo nvidia-smi -i %d -mig 0' and reboot or reset the GPU", gpus[0].Index),
			"every GPU has MIG mode on; mltrain gives whole GPUs to workers")
	}
	return out, warns, nil
}

// assign picks the mode and gives each worker its GPU; it returns how many
// workers there are.
func assign(p *Plan, gpus []gpu.GPU, opts Options) (int, error) {
	n := len(gpus)
	want := opts.Workers
	switch {
	case n == 0:
		if opts.ShareGPU {
			return 0, clierr.Hintf("drop --share-gpu: a host without GPUs gets a CPU rehearsal lab", "--share-gpu: this host has no GPU to share")
		}
		if want == 0 {
			want = cpuWorkers
		}
		if want > maxWorkers {
			return 0, clierr.Hintf(fmt.Sprintf("use --workers %d or fewer", cpuWorkers), "--workers %d: too many workers for a CPU rehearsal lab (at most %d)", want, maxWorkers)
		}
		p.Mode, p.Accelerator = ModeCPU, AccelCPU
		p.Warnings = append([]string{CPUWarning}, p.Warnings...)
		for i := 0; i < want; i++ {
			p.Workers = append(p.Workers, Worker{Index: i})
		}
	case opts.ShareGPU && n > 1:
		return 0, clierr.Hintf(fmt.Sprintf("drop --share-gpu: this host has %d GPUs and gets one worker per GPU", n),
			"--share-gpu is for a host with one GPU; this host has %d", n)
	case opts.ShareGPU:
		if want != 0 && want != 2 {
			return 0, clierr.Hintf("drop --workers: --share-gpu runs exactly two workers on the GPU", "--workers %d with --share-gpu: sharing runs two workers on the one GPU", want)
		}
		p.Mode = ModeShared
		for i := 0; i < 2; i++ {
			g := gpus[0]
			p.Workers = append(p.Workers, Worker{Index: i, GPU: &g, SharedGPU: true})
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("two workers share GPU %d (%s): its memory and compute are split between them", gpus[0].Index, gpus[0].Name))
	default:
		if want == 0 {
			want = n
		}
		if want > n {
			hint := fmt.Sprintf("use --workers %d or fewer", n)
			if n == 1 {
				hint = "add --share-gpu to run two workers on the one GPU"
			}
			return 0, clierr.Hintf(hint, "--workers %d: this host has %d usable GPU(s), and each worker needs its own", want, n)
		}
		p.Mode = ModeStandard
		for i := 0; i < want; i++ {
			g := gpus[i]
			p.Workers = append(p.Workers, Worker{Index: i, GPU: &g})
		}
		if n == 1 {
			p.Warnings = append(p.Warnings, "one GPU, one worker: the multi-worker exercises need two workers; add --share-gpu to run two workers on it")
		}
	}
	if p.Mode != ModeCPU {
		p.Vendor = gpus[0].Vendor
		p.Accelerator = AccelCUDA
		if p.Vendor == gpu.AMD {
			p.Accelerator = AccelROCm
		}
	}
	for i := range p.Workers {
		p.Workers[i].Service = service.WorkerService(i)
		p.Workers[i].Container = service.ContainerName(p.Project, p.Workers[i].Service)
		p.Workers[i].AgentPort = service.DefaultAgentPort
	}
	p.Head.Container = service.ContainerName(p.Project, service.HeadService)
	return len(p.Workers), nil
}
