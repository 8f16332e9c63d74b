package verify

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/lab/plan"
)

func gpuSpecs() []spec {
	return []spec{
		{id: "gpu.visible", group: GroupGPU, title: "each worker sees exactly its own GPU, no two workers the same", run: checkVisible},
		{id: "gpu.ray", group: GroupGPU, title: "Ray reports 1 GPU on each worker node and none on the head", run: checkRayGPUs},
	}
}

// DefaultGPUListCommand lists the GPUs a process in a worker can use, by
// vendor: NVIDIA's UUIDs, or ROCm's agents (rocminfo prints "Uuid: GPU-…"
// for each GPU agent the container's devices give it).
var DefaultGPUListCommand = map[gpu.Vendor][]string{
	gpu.NVIDIA: {"nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"},
	gpu.AMD:    {"rocminfo"},
}

var (
	nvidiaUUID = regexp.MustCompile(`(?m)^\s*(GPU-[0-9A-Za-z-]+)\s*$`)
	rocmUUID   = regexp.MustCompile(`(?m)^\s*Uuid:\s*(GPU-[0-9A-Za-z-]+)\s*$`)
)

// ParseGPUList reads the GPU UUIDs out of the listing command's output.
func ParseGPUList(v gpu.Vendor, out string) []string {
	re := nvidiaUUID
	if v == gpu.AMD {
		re = rocmUUID
	}
	var ids []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func (e *env) listCommand(v gpu.Vendor) []string {
	if c, ok := e.d.GPUListCommand[v]; ok {
		return c
	}
	return DefaultGPUListCommand[v]
}

type seenGPUs struct {
	worker plan.Worker
	uuids  []string
	err    string // why the listing failed
}

func checkVisible(ctx context.Context, e *env) outcome {
	p := e.plan
	if p.Vendor == "" {
		return skip("mode %s: workers have no GPU device to list (Ray's logical GPUs are checked by gpu.ray)", modeName(p.Mode))
	}
	cs, err := e.containers()
	if err != nil {
		return failErr(err, e.cmd("doctor"))
	}
	cmd := e.listCommand(p.Vendor)
	if len(cmd) == 0 {
		return fail("report this as an mltrain bug", "no GPU listing command for vendor %q", p.Vendor)
	}
	seen := make([]seenGPUs, len(p.Workers))
	var wg sync.WaitGroup
	for i, w := range p.Workers {
		seen[i].worker = w
		d, ok := cs[w.Service]
		if !ok {
			seen[i].err = "no container"
			continue
		}
		if !d.Running {
			seen[i].err = "container " + d.Name + " is not running"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen[i] = listGPUs(ctx, e.d.Engine, d, w, cmd, p.Vendor)
		}()
	}
	wg.Wait()

	var problems, evidence []string
	fix := e.cmd("down") + " && " + e.cmd("up") + " (containers are created again with one GPU each)"
	owners := map[string][]string{} // by lower-case UUID
	shown := map[string]string{}    // as the tool printed it
	for _, s := range seen {
		svc := s.worker.Service
		if s.err != "" {
			problems = append(problems, svc+": "+s.err)
			fix = e.cmd("doctor") + "; then " + e.cmd("up")
			if strings.HasPrefix(s.err, "container") || s.err == "no container" {
				fix = e.startFix(svc)
			}
			continue
		}
		for _, u := range s.uuids {
			k := strings.ToLower(u)
			owners[k] = append(owners[k], svc)
			if _, ok := shown[k]; !ok {
				shown[k] = u
			}
		}
		switch {
		case len(s.uuids) != 1:
			problems = append(problems, fmt.Sprintf("%s sees %d GPUs (%s), not exactly 1", svc, len(s.uuids), orNone(s.uuids)))
		case s.worker.GPU != nil && !strings.EqualFold(s.uuids[0], s.worker.GPU.UUID):
			problems = append(problems, fmt.Sprintf("%s sees %s, but was given %s", svc, s.uuids[0], s.worker.GPU.UUID))
		default:
			evidence = append(evidence, fmt.Sprintf("%s sees %s only", svc, s.uuids[0]))
		}
	}
	if p.Mode != plan.ModeShared {
		ids := make([]string, 0, len(owners))
		for u := range owners {
			ids = append(ids, u)
		}
		sort.Strings(ids)
		for _, u := range ids {
			if len(owners[u]) > 1 {
				problems = append(problems, fmt.Sprintf("%s is visible to %s: two workers share one GPU", shown[u], strings.Join(owners[u], " and ")))
			}
		}
	}
	if len(problems) > 0 {
		return fail(fix, "%s", strings.Join(problems, "; "))
	}
	how := "no two workers the same"
	if p.Mode == plan.ModeShared {
		how = "shared by design (--share-gpu)"
	}
	return pass("%s (%s; by '%s' in each worker)", strings.Join(evidence, "; "), how, strings.Join(e.listCommand(p.Vendor), " "))
}

func listGPUs(ctx context.Context, eng docker.Engine, d docker.ContainerDetails, w plan.Worker, cmd []string, v gpu.Vendor) seenGPUs {
	s := seenGPUs{worker: w}
	res, err := eng.Exec(ctx, d.ID, cmd)
	if err != nil {
		s.err = fmt.Sprintf("'%s' could not run in %s: %v", strings.Join(cmd, " "), d.Name, err)
		return s
	}
	if res.ExitCode != 0 {
		s.err = fmt.Sprintf("'%s' in %s exited %d: %s", strings.Join(cmd, " "), d.Name, res.ExitCode, firstLine(res.Stderr+res.Stdout))
		return s
	}
	s.uuids = ParseGPUList(v, res.Stdout)
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func checkRayGPUs(ctx context.Context, e *env) outcome {
	nodes, err := e.nodes()
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	cs, _ := e.containers() // names only: best effort
	pairs, _ := e.workerNodes(cs, nodes)
	names := map[string]string{} // running workers' addresses
	stale := map[string]bool{}   // nodes of stopped workers Ray still lists ALIVE
	var skipped []string
	for _, w := range e.plan.Workers {
		p, ok := pairs[w.Service]
		switch {
		case ok && p.Running && p.IP != "":
			names[p.IP] = w.Service
		case ok && p.Stale:
			stale[p.NodeID] = true
			skipped = append(skipped, fmt.Sprintf("%s's node (container %s; Ray has not marked it DEAD yet)", w.Service, p.State))
		}
	}
	var problems, evidence []string
	workers := 0
	for _, n := range nodes {
		if !n.Alive() {
			continue
		}
		if n.IsHeadNode {
			if n.GPUs() != 0 {
				problems = append(problems, fmt.Sprintf("the head (%s) advertises %g GPU: jobs could land on a node without one", n.NodeIP, n.GPUs()))
			} else {
				evidence = append(evidence, "head 0")
			}
			continue
		}
		if stale[n.NodeID] {
			continue // listed until Ray's health checks give up on it
		}
		name, ok := names[n.NodeIP]
		workers++
		if ok {
			name += " (" + n.NodeIP + ")"
		} else {
			name = n.NodeIP
		}
		if n.GPUs() != 1 {
			problems = append(problems, fmt.Sprintf("worker node %s advertises %g GPU, not 1", name, n.GPUs()))
			continue
		}
		evidence = append(evidence, name+" 1")
	}
	if len(problems) > 0 {
		return fail(e.cmd("down")+" && "+e.cmd("up")+" (workers start with --num-gpus=1, the head with 0)", "%s", strings.Join(problems, "; "))
	}
	if workers == 0 {
		return fail(e.cmd("status")+"; start the workers with '"+e.cmd("up")+"'", "Ray lists no alive worker node")
	}
	out := "GPU per alive node: " + strings.Join(evidence, ", ")
	if len(skipped) > 0 {
		out += "; not counted: " + strings.Join(skipped, ", ")
	}
	return pass("%s", out)
}
