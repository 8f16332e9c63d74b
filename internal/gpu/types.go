// Package gpu finds the host's GPUs: NVIDIA through NVML (go-nvml), AMD through
// the KFD topology in sysfs, and a PCI scan that tells "hardware present but the
// driver is not working" from "no GPU at all".
//
// The JSON form of Report is stable: `mltrain gpus --json` prints it,
// `mltrain render --gpus-from` reads it, and instructors' scripts consume it.
package gpu

import (
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Vendor of a GPU.
type Vendor string

const (
	NVIDIA Vendor = "nvidia"
	AMD    Vendor = "amd"
)

// GPU is one usable device.
type GPU struct {
	Vendor    Vendor `json:"vendor"`
	Index     int    `json:"index"`
	UUID      string `json:"uuid"` // NVIDIA UUID (GPU-…) or AMD KFD unique_id
	Name      string `json:"name"`
	MemoryMiB int64  `json:"memory_mib"`
	PCIBusID  string `json:"pci_bus_id"` // normalised 0000:17:00.0
	// AMD only: the render node the container gets, e.g. /dev/dri/renderD128.
	RenderNode string `json:"render_node,omitempty"`
	// AMD only: the KFD gpu_id (what ROCm tools show as the node's id).
	KFDGPUID uint64 `json:"kfd_gpu_id,omitempty"`
	// NVIDIA only: MIG mode on. A MIG-enabled GPU is listed but flagged.
	MIG    bool   `json:"mig,omitempty"`
	Source string `json:"source"` // nvml | kfd
}

// Problem is something that keeps GPUs from being used, with its fix.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
	// Next is Fix's structure when it names mltrain commands: the command
	// layer writes them for the lab the user means (FixWith).
	Next *clierr.Next `json:"-"`
	// Vendor the problem concerns ("" when none, e.g. no-gpu). Not part of
	// the stable JSON; doctor uses it to decide which plumbing to check.
	Vendor Vendor `json:"-"`
}

// Report is the result of detection.
type Report struct {
	GPUs     []GPU     `json:"gpus"`
	Problems []Problem `json:"problems"`
	// The host's driver versions, each omitted when it could not be read.
	// NVIDIADriver is NVML's nvmlSystemGetDriverVersion, e.g. "570.133.20".
	NVIDIADriver string `json:"nvidia_driver_version,omitempty"`
	// CUDADriver is the highest CUDA version that driver supports
	// (nvmlSystemGetCudaDriverVersion, 12080 -> "12.8"): what nvidia-smi
	// prints as "CUDA Version".
	CUDADriver string `json:"cuda_driver_version,omitempty"`
	// AMDGPUDriver is /sys/module/amdgpu/version, e.g. "6.12.12". Only AMD's
	// amdgpu-dkms module writes it; the kernel's in-tree amdgpu has none.
	AMDGPUDriver string `json:"amdgpu_driver_version,omitempty"`
}

// Vendor returns the vendor of the GPUs found ("" when none).
func (r Report) Vendor() Vendor {
	if len(r.GPUs) == 0 {
		return ""
	}
	return r.GPUs[0].Vendor
}

// HardwareWithoutDriver reports whether a problem says GPU hardware is
// present but unusable: such a host must not silently become a CPU lab.
func (r Report) HardwareWithoutDriver() bool {
	for _, p := range r.Problems {
		switch p.Code {
		case CodeDriverMissing, CodeLibraryMissing, CodeNVMLError, CodeKFDMissing, CodeKFDTopology:
			return true
		}
	}
	return false
}

// Warning reports whether the problem leaves the lab usable (doctor shows
// it as a warning; up does not refuse to start over it).
func (p Problem) Warning() bool {
	switch p.Code {
	case CodeMIGEnabled, CodePCIUnreadable, CodeDriverCompat, CodeDriverUnchecked:
		return true
	}
	return false
}

// Problem codes other packages test for.
const (
	CodeDriverMissing  = "driver-missing"  // PCI device present, kernel driver not bound
	CodeLibraryMissing = "library-missing" // driver bound, user-space library (NVML) absent
	CodeNVMLError      = "nvml-error"      // NVML present but failing
	CodeNoGPU          = "no-gpu"          // no GPU hardware at all
	CodeKFDMissing     = "kfd-missing"     // amdgpu bound but no KFD (compute) interface
	CodeKFDTopology    = "kfd-topology"    // a KFD topology file is unreadable or garbage
	CodeMIGEnabled     = "mig-enabled"     // an NVIDIA GPU has MIG on; workers need whole GPUs
	CodePCIUnreadable  = "pci-unreadable"  // the PCI view could not be read; detection stands without it

	// From CheckDriver, not Detect: the driver against the worker image's needs.
	CodeDriverTooOld    = "driver-too-old"      // the image cannot run on this driver: refuse the lab
	CodeDriverCompat    = "driver-minor-compat" // runs through CUDA minor-version compatibility, with limits
	CodeDriverUnchecked = "driver-unchecked"    // the driver's version is unknown, so it was not compared
)

// FixWith is the fix with its mltrain commands written by line.
func (p Problem) FixWith(line func(words ...string) string) string {
	if p.Next != nil {
		return p.Next.Write(line)
	}
	return p.Fix
}

// AsNext is the fix as a next step, its mltrain commands as words.
func (p Problem) AsNext() clierr.Next {
	if p.Next != nil {
		return *p.Next
	}
	return clierr.Next{Text: literal(p.Fix)}
}

// withFix gives p a fix that names mltrain commands.
func withFix(p *Problem, n clierr.Next) *Problem {
	p.Fix, p.Next = n.String(), &n
	return p
}

// literal is s inside a Next's format text.
func literal(s string) string { return strings.ReplaceAll(s, "%", "%%") }
