package gpu

import (
	"fmt"
	"github.com/mltrain/mltrain/internal/clierr"
	"os"
	"strconv"
	"strings"
)

// amdgpuModuleVersion is where AMD's out-of-tree (amdgpu-dkms) module
// publishes its version, e.g. "6.12.12" for the driver shipped with ROCm 6.4.
// The kernel's in-tree amdgpu sets no MODULE_VERSION, so there it is absent.
// Nothing else in sysfs versions the driver: the KFD topology's properties
// carry firmware versions (fw_version, sdma_fw_version), not the driver's,
// and the KFD interface version needs an ioctl on /dev/kfd, which opens a
// compute context.
const amdgpuModuleVersion = "/sys/module/amdgpu/version"

// amdgpuVersion reads the amdgpu module's version under root ("" when absent).
func amdgpuVersion(root string) string {
	b, err := os.ReadFile(under(root, amdgpuModuleVersion))
	if err != nil {
		return ""
	}
	return clip(strings.TrimSpace(string(b)))
}

// FormatCUDAVersion spells NVML's CUDA version number the way CUDA does:
// 12080 is "12.8" (nvml.h: major v/1000, minor (v%1000)/10). 0 is "".
func FormatCUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// DriverNeed is what the lab's worker images need from the host's driver.
// Their owner (package dockerfiles) fills it in; this package only compares.
type DriverNeed struct {
	CUDA CUDANeed
	ROCm ROCmNeed
}

// CUDANeed is what an image carrying a CUDA runtime needs.
type CUDANeed struct {
	Image   string // what needs it, for messages, e.g. "the CUDA worker image (PyTorch cu128)"
	Version string // the CUDA runtime it carries, e.g. "12.8"
	// MinDriver is the oldest driver the runtime runs on at all (for CUDA
	// 12.x, 525.60.13 through minor-version compatibility). Older drivers
	// give CodeDriverTooOld.
	MinDriver string
	// FullDriver is the driver its CUDA release needs for every feature
	// ("570.26" for 12.8 GA). Between the two: CodeDriverCompat.
	FullDriver string
}

// ROCmNeed is what an image carrying a ROCm user space needs.
type ROCmNeed struct {
	Image   string // e.g. "the ROCm worker image"
	Version string // the ROCm user space it carries, e.g. "7.0.1"
	// MinRelease is the oldest AMD GPU driver release that user space is
	// supported on ("6.2"), and MinModule that release's amdgpu module
	// version ("6.8.5"), which is what the host shows. Older: CodeDriverTooOld.
	MinRelease string
	MinModule  string
	// Install is the command that installs a supported driver (for the fix).
	Install string
}

// Describe says what the image needs from vendor v's driver, for a passing row.
func (n DriverNeed) Describe(v Vendor) string {
	switch v {
	case NVIDIA:
		return fmt.Sprintf("%s carries CUDA %s: NVIDIA driver %s or newer", n.CUDA.Image, n.CUDA.Version, n.CUDA.FullDriver)
	case AMD:
		return fmt.Sprintf("%s carries ROCm %s: amdgpu driver %s or newer (module version %s)",
			n.ROCm.Image, n.ROCm.Version, n.ROCm.MinRelease, n.ROCm.MinModule)
	}
	return ""
}

// DriverSummary names vendor v's driver as detection found it, e.g.
// "NVIDIA driver 570.133.20 (CUDA 12.8)" or "amdgpu driver (version unknown)".
func (r Report) DriverSummary(v Vendor) string {
	switch v {
	case NVIDIA:
		s := "NVIDIA driver"
		if r.NVIDIADriver != "" {
			s += " " + r.NVIDIADriver
		}
		switch {
		case r.CUDADriver != "":
			s += " (CUDA " + r.CUDADriver + ")"
		case r.NVIDIADriver == "":
			s += " (version unknown)"
		}
		return s
	case AMD:
		if r.AMDGPUDriver == "" {
			return "amdgpu driver (version unknown)"
		}
		return "amdgpu driver " + r.AMDGPUDriver
	}
	return ""
}

// CheckDriver compares the host's driver, as r reports it, with what the
// worker image needs, for each vendor r has GPUs of. It is pure: the lab's
// plan, up and doctor all call it with the need from package dockerfiles.
// nil means new enough (or no GPU: a CPU rehearsal needs no driver).
// Otherwise one problem per vendor, with Vendor set:
//   - CodeDriverTooOld: the image cannot run on this driver; refuse the lab.
//   - CodeDriverCompat: it runs through CUDA minor-version compatibility
//     with documented limits (a warning).
//   - CodeDriverUnchecked: the version is unknown, so nothing was compared
//     (a warning, never a failure).
func CheckDriver(r Report, need DriverNeed) []Problem {
	var out []Problem
	for _, v := range []Vendor{NVIDIA, AMD} {
		if !r.Has(v) {
			continue
		}
		var p *Problem
		if v == NVIDIA {
			p = checkNVIDIADriver(r, need.CUDA)
		} else {
			p = checkAMDGPUDriver(r, need.ROCm)
		}
		if p != nil {
			p.Vendor = v
			out = append(out, *p)
		}
	}
	return out
}

// Has reports whether r lists a GPU of vendor v.
func (r Report) Has(v Vendor) bool {
	for _, g := range r.GPUs {
		if g.Vendor == v {
			return true
		}
	}
	return false
}

func checkNVIDIADriver(r Report, n CUDANeed) *Problem {
	found := r.DriverSummary(NVIDIA)
	needCUDA, e1 := parseVersion(n.Version)
	minDriver, e2 := parseVersion(n.MinDriver)
	fullDriver, e3 := parseVersion(n.FullDriver)
	if n.Version == "" || e1 != nil || e2 != nil || e3 != nil {
		return &Problem{Code: CodeDriverUnchecked, Message: found + ": not checked, no valid CUDA requirement was given",
			Fix: "run 'nvidia-smi' and compare its 'CUDA Version' with the CUDA version of the worker image"}
	}
	upgrade := fmt.Sprintf("upgrade the NVIDIA driver to %s or newer (Ubuntu: 'sudo apt install nvidia-driver-%d-server', then 'sudo reboot'; 'nvidia-smi' then shows CUDA Version %s or higher)",
		n.FullDriver, fullDriver[0], n.Version)
	needs := fmt.Sprintf("%s carries CUDA %s, which needs NVIDIA driver %s or newer (%s or newer for all of CUDA %s)",
		n.Image, n.Version, n.MinDriver, n.FullDriver, n.Version)

	var tooOld, compat bool
	drv, drvErr := parseVersion(r.NVIDIADriver)
	cuda, cudaErr := parseVersion(r.CUDADriver)
	switch {
	case drvErr == nil:
		tooOld, compat = compareVersions(drv, minDriver) < 0, compareVersions(drv, fullDriver) < 0
	case cudaErr == nil: // the CUDA version alone still tells the major apart
		tooOld, compat = cuda[0] < needCUDA[0], compareVersions(cuda, needCUDA) < 0
	default:
		why := "NVML did not report the driver's version"
		if r.NVIDIADriver != "" {
			why = fmt.Sprintf("its version %q could not be read", r.NVIDIADriver)
		}
		return &Problem{Code: CodeDriverUnchecked, Message: fmt.Sprintf("NVIDIA driver not checked: %s; %s", why, needs),
			Fix: fmt.Sprintf("run 'nvidia-smi': its 'CUDA Version' must be %s or higher, else %s", n.Version, upgrade)}
	}
	switch {
	case tooOld:
		older := "an older CUDA"
		if r.CUDADriver != "" {
			older = "CUDA " + r.CUDADriver + " or older"
		}
		return withFix(&Problem{Code: CodeDriverTooOld,
			Message: fmt.Sprintf("%s is too old: %s; PyTorch would say \"The NVIDIA driver on your system is too old\" and every GPU job would fail", found, needs)},
			clierr.Step(literal(upgrade)+"; or replace the worker image with one whose PyTorch is built for "+literal(older)+": '%s'", "up", "--image-worker", "IMAGE"))
	case compat:
		return &Problem{Code: CodeDriverCompat,
			Message: fmt.Sprintf("%s predates CUDA %s: %s runs on it only through CUDA minor-version compatibility, so PyTorch's prebuilt kernels work but code that JIT-compiles PTX made by CUDA %s (custom CUDA extensions, NVRTC kernels) fails with cudaErrorUnsupportedPtxVersion",
				found, n.Version, n.Image, n.Version),
			Fix: upgrade + " for full CUDA " + n.Version + " support; the lab's exercises use only prebuilt kernels and run as they are"}
	}
	return nil
}

func checkAMDGPUDriver(r Report, n ROCmNeed) *Problem {
	found := r.DriverSummary(AMD)
	minModule, err := parseVersion(n.MinModule)
	if n.Version == "" || err != nil {
		return &Problem{Code: CodeDriverUnchecked, Message: found + ": not checked, no valid ROCm requirement was given",
			Fix: "compare 'cat " + amdgpuModuleVersion + "' with AMD's user and kernel-space support matrix"}
	}
	needs := fmt.Sprintf("%s carries ROCm %s, which AMD supports on its amdgpu driver %s or newer (module version %s)",
		n.Image, n.Version, n.MinRelease, n.MinModule)
	install := fmt.Sprintf("install AMD's amdgpu driver for ROCm %s (%s), then 'sudo reboot'", n.Version, n.Install)
	if r.AMDGPUDriver == "" {
		return withFix(&Problem{Code: CodeDriverUnchecked,
			Message: fmt.Sprintf("amdgpu driver not checked: %s is absent, so this is the kernel's own amdgpu, which carries no version; %s", amdgpuModuleVersion, needs)},
			clierr.Step("nothing to do while '%s' passes its GPU checks; for a pair AMD supports, "+literal(install), "verify"))
	}
	v, err := parseVersion(r.AMDGPUDriver)
	if err != nil {
		return &Problem{Code: CodeDriverUnchecked,
			Message: fmt.Sprintf("amdgpu driver not checked: %s holds %q, not a version; %s", amdgpuModuleVersion, r.AMDGPUDriver, needs),
			Fix:     "check the driver with 'modinfo amdgpu'; for a pair AMD supports, " + install}
	}
	if compareVersions(v, minModule) < 0 {
		return withFix(&Problem{Code: CodeDriverTooOld,
			Message: fmt.Sprintf("%s is too old: %s, so GPU jobs would fail in the HIP runtime", found, needs)},
			clierr.Step(literal(install)+"; or replace the worker image with one built for this driver's ROCm: '%s'", "up", "--image-worker", "IMAGE"))
	}
	return nil
}

// parseVersion reads a dotted numeric version: NVIDIA's "570.133.20" and
// "570.26", amdgpu's "6.12.12", CUDA's "12.8". Hand-written because semver
// parsers reject NVIDIA's two-part and zero-padded ("575.51.03") forms.
func parseVersion(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("empty version")
	}
	parts := strings.Split(s, ".")
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' || p[0] == '-' {
			return nil, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		out[i] = n
	}
	return out, nil
}

// compareVersions orders two parsed versions; missing parts count as 0.
func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
