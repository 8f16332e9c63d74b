package gpu

import (
	"context"
	"fmt"
	"github.com/mltrain/mltrain/internal/clierr"
	"strings"
)

// Options tunes Detect. The zero value reads this host.
type Options struct {
	// Root stands for "/" when reading host files; "" means $MLTRAIN_SYSFS_ROOT,
	// else "/" (see RootEnv).
	Root string
	// NVML replaces the system library (tests). When nil, the real NVML is
	// used on the real root, and none (treated as absent) under a fixture root.
	NVML NVML
}

// Detect finds the host's GPUs: NVIDIA through NVML, AMD through the KFD
// topology, then a PCI scan to explain GPU hardware neither could use. What
// keeps GPUs from working is reported as Problems (data, not an error); the
// error is only for a root that does not exist. GPUs and Problems are never nil.
func Detect(ctx context.Context, opts Options) (Report, error) {
	root, err := ResolveRoot(opts.Root)
	if err != nil {
		return Report{GPUs: []GPU{}, Problems: []Problem{}}, err
	}
	nv := opts.NVML
	if nv == nil {
		if root == "/" {
			nv = systemNVML()
		} else {
			nv = fixtureNVML{}
		}
	}
	rep := Report{GPUs: []GPU{}, Problems: []Problem{}}
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	nvr := detectNVML(nv)
	rep.GPUs = append(rep.GPUs, nvr.gpus...)
	rep.Problems = append(rep.Problems, nvr.problems...)
	rep.NVIDIADriver = nvr.driver.Version
	rep.CUDADriver = FormatCUDAVersion(nvr.driver.CUDA)

	kfd := detectKFD(root)
	rep.GPUs = append(rep.GPUs, kfd.gpus...)
	rep.Problems = append(rep.Problems, kfd.problems...)
	rep.AMDGPUDriver = amdgpuVersion(root)

	pci, err := ScanPCI(root)
	if err != nil {
		// Without the PCI view detection still stands; say what could not be checked.
		rep.Problems = append(rep.Problems, Problem{Code: CodePCIUnreadable,
			Message: err.Error(), Fix: "run mltrain as a user that can read /sys/bus/pci (any user normally can)"})
	}
	rep.Problems = append(rep.Problems, explainPCI(pci, rep.GPUs, nvr.state, kfd.present)...)

	if len(rep.GPUs) == 0 && !rep.HardwareWithoutDriver() {
		rep.Problems = append(rep.Problems, *withFix(&Problem{Code: CodeNoGPU,
			Message: fmt.Sprintf("no NVIDIA or AMD GPU found (NVML, %s, %s)", under(root, kfdNodes), under(root, pciDevices))},
			clierr.Step("lease a GPU node for the real lab; on this host '%s' runs a CPU-only rehearsal", "up")))
	}
	return rep, nil
}

// fixtureNVML stands for "no NVIDIA library" under a fixture root.
type fixtureNVML struct{}

func (fixtureNVML) Init() error                    { return ErrNVMLNotFound }
func (fixtureNVML) Shutdown()                      {}
func (fixtureNVML) DeviceCount() (int, error)      { return 0, ErrNVMLNotFound }
func (fixtureNVML) Device(int) (NVMLDevice, error) { return NVMLDevice{}, ErrNVMLNotFound }
func (fixtureNVML) Driver() NVMLDriver             { return NVMLDriver{} }

// explainPCI turns GPU functions that no vendor interface listed into
// problems naming the driver and the fix, one per vendor and cause.
func explainPCI(pci []PCIDevice, found []GPU, state nvmlState, kfdPresent bool) []Problem {
	listed := map[string]bool{}
	for _, g := range found {
		listed[g.PCIBusID] = true
	}
	var nvNoDriver, nvNoLib, amdNoDriver, amdNoKFD []string
	for _, d := range pci {
		if listed[d.Address] {
			continue
		}
		desc := d.Address
		if d.Driver != "" {
			desc += " (bound to " + d.Driver + ")"
		}
		switch d.Vendor {
		case NVIDIA:
			switch {
			case d.Driver != "nvidia":
				nvNoDriver = append(nvNoDriver, desc)
			case state == nvmlAbsent || state == nvmlNotBuilt:
				nvNoLib = append(nvNoLib, d.Address)
			case state == nvmlNoDriver:
				nvNoDriver = append(nvNoDriver, desc)
			}
			// nvmlOK but unlisted (hidden by NVIDIA_VISIBLE_DEVICES, or NVML
			// failed on it: already a problem) or nvmlFailed: nothing to add.
		case AMD:
			switch {
			case d.Driver != "amdgpu":
				amdNoDriver = append(amdNoDriver, desc)
			case !kfdPresent:
				amdNoKFD = append(amdNoKFD, d.Address)
			}
			// amdgpu with KFD but not listed: an integrated/display-only GPU
			// or a node already reported as unreadable.
		}
	}
	var out []Problem
	if len(nvNoDriver) > 0 {
		out = append(out, Problem{Code: CodeDriverMissing, Vendor: NVIDIA,
			Message: fmt.Sprintf("NVIDIA GPU hardware without the nvidia kernel driver: %s", strings.Join(nvNoDriver, ", ")),
			Fix:     "install and load the NVIDIA driver (e.g. 'sudo ubuntu-drivers install' or 'sudo apt install nvidia-driver-<version>'), then 'sudo reboot' and check 'nvidia-smi'"})
	}
	if len(nvNoLib) > 0 {
		p := Problem{Code: CodeLibraryMissing, Vendor: NVIDIA,
			Message: fmt.Sprintf("the nvidia driver is loaded for %s but libnvidia-ml.so.1 (NVML) was not found", strings.Join(nvNoLib, ", ")),
			Fix:     "install the driver's user-space libraries matching the loaded driver (e.g. 'sudo apt install nvidia-utils-<version>') so 'nvidia-smi' works"}
		if state == nvmlNotBuilt {
			p.Message = fmt.Sprintf("NVIDIA GPUs at %s, but %v", strings.Join(nvNoLib, ", "), ErrNVMLNotBuilt)
			p.Fix = "use an mltrain built with cgo ('CGO_ENABLED=1 make build')"
		}
		out = append(out, p)
	}
	if len(amdNoDriver) > 0 {
		out = append(out, Problem{Code: CodeDriverMissing, Vendor: AMD,
			Message: fmt.Sprintf("AMD GPU hardware without the amdgpu kernel driver: %s", strings.Join(amdNoDriver, ", ")),
			Fix:     "install the amdgpu driver ('sudo amdgpu-install -y --usecase=dkms'), then 'sudo reboot' and check 'rocm-smi'"})
	}
	if len(amdNoKFD) > 0 {
		out = append(out, Problem{Code: CodeKFDMissing, Vendor: AMD,
			Message: fmt.Sprintf("amdgpu is loaded for %s but /sys/class/kfd/kfd is missing: no compute (KFD) support", strings.Join(amdNoKFD, ", ")),
			Fix:     "install the amdgpu-dkms driver with KFD ('sudo amdgpu-install -y --usecase=dkms'), then 'sudo reboot'"})
	}
	return out
}
