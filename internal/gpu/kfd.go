package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// kfdNodes is where the AMD KFD driver publishes its compute topology.
const kfdNodes = "/sys/class/kfd/kfd/topology/nodes"

// amdNames names the boards the course leases and their neighbours when the
// board's own product_name is not in sysfs (device id -> name; from the
// amdgpu.ids table ROCm ships).
var amdNames = map[uint64]string{
	0x66a1: "AMD Instinct MI50",
	0x738c: "AMD Instinct MI100",
	0x7408: "AMD Instinct MI250X",
	0x740c: "AMD Instinct MI250X / MI250",
	0x740f: "AMD Instinct MI210",
	0x74a0: "AMD Instinct MI300A",
	0x74a1: "AMD Instinct MI300X",
}

// AMDName is the display name for an AMD PCI device id.
func AMDName(deviceID uint64) string {
	if n, ok := amdNames[deviceID]; ok {
		return n
	}
	return fmt.Sprintf("AMD GPU 0x%04x", deviceID)
}

type kfdResult struct {
	present  bool // the KFD topology exists (amdgpu with compute support is loaded)
	gpus     []GPU
	problems []Problem
}

// detectKFD lists the GPU nodes of the KFD topology under root, in numeric
// node order. A node is a GPU when its gpu_id is not 0 and it has SIMDs
// (CPU nodes have gpu_id 0 and simd_count 0). An unreadable or garbage node
// becomes a problem naming its file; the other nodes are still listed.
func detectKFD(root string) kfdResult {
	dir := under(root, kfdNodes)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return kfdResult{}
	}
	res := kfdResult{present: true}
	if err != nil {
		res.problems = append(res.problems, topologyProblem(dir, err))
		return res
	}
	var nodes []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= 0 {
			nodes = append(nodes, n)
		}
	}
	// The directory order ("10" before "2") is not the node order.
	sort.Ints(nodes)
	for _, n := range nodes {
		g, ok, prob := readKFDNode(root, filepath.Join(dir, strconv.Itoa(n)))
		if prob != nil {
			res.problems = append(res.problems, *prob)
			continue
		}
		if ok {
			g.Index = len(res.gpus)
			res.gpus = append(res.gpus, g)
		}
	}
	return res
}

func topologyProblem(file string, err error) Problem {
	return Problem{
		Code:    CodeKFDTopology,
		Vendor:  AMD,
		Message: fmt.Sprintf("cannot read the AMD GPU topology file %s: %v", file, err),
		Fix:     "check the amdgpu driver ('sudo dmesg | grep -i -e amdgpu -e kfd'); reboot or reinstall it with 'amdgpu-install -y --usecase=dkms'",
	}
}

// readKFDNode reads one topology node: (gpu, true, nil) for a GPU node,
// (_, false, nil) for a CPU node, or a problem.
func readKFDNode(root, node string) (GPU, bool, *Problem) {
	idFile := filepath.Join(node, "gpu_id")
	var gpuID uint64 // stays 0 when the file is absent: then the SIMDs alone say GPU
	if b, err := os.ReadFile(idFile); err == nil {
		v, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			p := topologyProblem(idFile, fmt.Errorf("not an unsigned integer: %q", clip(strings.TrimSpace(string(b)))))
			return GPU{}, false, &p
		}
		if v == 0 {
			return GPU{}, false, nil // CPU node
		}
		gpuID = v
	} else if !errors.Is(err, fs.ErrNotExist) {
		p := topologyProblem(idFile, err)
		return GPU{}, false, &p
	}
	propFile := filepath.Join(node, "properties")
	b, err := os.ReadFile(propFile)
	if err != nil {
		p := topologyProblem(propFile, err)
		return GPU{}, false, &p
	}
	props, err := ParseProperties(b)
	if err != nil {
		p := topologyProblem(propFile, err)
		return GPU{}, false, &p
	}
	if props["simd_count"] == 0 {
		return GPU{}, false, nil // CPU node (or gpu_id file absent on a CPU node)
	}
	minor := props["drm_render_minor"]
	if minor == 0 {
		p := topologyProblem(propFile, errors.New("GPU node without drm_render_minor: no render node to give a container"))
		return GPU{}, false, &p
	}
	loc := props["location_id"]
	g := GPU{
		Vendor:     AMD,
		PCIBusID:   formatBusID(props["domain"], (loc>>8)&0xff, (loc>>3)&0x1f, loc&7),
		RenderNode: fmt.Sprintf("/dev/dri/renderD%d", minor),
		KFDGPUID:   gpuID,
		MemoryMiB:  int64(vramBytes(node, props) >> 20),
		Source:     "kfd",
	}
	if id := props["unique_id"]; id != 0 {
		// The form ROCm's runtime reports (rocminfo "Uuid") and ROCR_VISIBLE_DEVICES accepts.
		g.UUID = fmt.Sprintf("GPU-%016x", id)
	}
	g.Name = productName(root, minor)
	if g.Name == "" {
		g.Name = AMDName(props["device_id"])
	}
	return g, true, nil
}

// vramBytes sums the node's frame-buffer memory banks (heap types 1 public,
// 2 private); local_mem_size is the fallback, though newer kernels report 0.
func vramBytes(node string, props Properties) uint64 {
	banks, _ := filepath.Glob(filepath.Join(node, "mem_banks", "*", "properties"))
	var total uint64
	for _, f := range banks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		bp, err := ParseProperties(b)
		if err != nil {
			continue // a bad bank only costs the memory figure, not the GPU
		}
		if ht := bp["heap_type"]; ht == 1 || ht == 2 {
			total += bp["size_in_bytes"]
		}
	}
	if total == 0 {
		total = props["local_mem_size"]
	}
	return total
}

// productName is the board's own name from its FRU EEPROM, where the kernel
// exposes it (server boards only).
func productName(root string, minor uint64) string {
	b, err := os.ReadFile(under(root, fmt.Sprintf("/sys/class/drm/renderD%d/device/product_name", minor)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
