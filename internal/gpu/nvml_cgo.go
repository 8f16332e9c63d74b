//go:build cgo

package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// systemNVML is the host's NVML, opened at run time with dlopen: a host
// without NVIDIA's library gets ErrNVMLNotFound from Init, not a crash.
func systemNVML() NVML { return FromNVML(nvml.New()) }

// FromNVML adapts a go-nvml Interface (the real library or its mocks, which
// is how packages above this one test detection end to end). cgo only.
func FromNVML(lib nvml.Interface) NVML { return &goNVML{lib: lib} }

type goNVML struct{ lib nvml.Interface }

// nvmlErr classifies go-nvml's return codes into this package's errors.
func nvmlErr(op string, r nvml.Return) error {
	switch r {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%s: %w", op, ErrNVMLNotFound)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%s: %w", op, ErrNVMLDriverNotLoaded)
	}
	// Return implements error with NVML's own text, even without the library.
	return fmt.Errorf("%s: %w", op, r)
}

func (g *goNVML) Init() error { return nvmlErr("nvmlInit", g.lib.Init()) }
func (g *goNVML) Shutdown()   { _ = g.lib.Shutdown() }

func (g *goNVML) Driver() NVMLDriver {
	var d NVMLDriver
	if v, r := g.lib.SystemGetDriverVersion(); r == nvml.SUCCESS {
		d.Version = v
	}
	if v, r := g.lib.SystemGetCudaDriverVersion(); r == nvml.SUCCESS {
		d.CUDA = v
	}
	return d
}

func (g *goNVML) DeviceCount() (int, error) {
	n, r := g.lib.DeviceGetCount()
	return n, nvmlErr("nvmlDeviceGetCount", r)
}

func (g *goNVML) Device(i int) (NVMLDevice, error) {
	d, r := g.lib.DeviceGetHandleByIndex(i)
	if err := nvmlErr("nvmlDeviceGetHandleByIndex", r); err != nil {
		return NVMLDevice{}, err
	}
	var out NVMLDevice
	if out.UUID, r = d.GetUUID(); r != nvml.SUCCESS {
		return out, nvmlErr("nvmlDeviceGetUUID", r)
	}
	if out.Name, r = d.GetName(); r != nvml.SUCCESS {
		return out, nvmlErr("nvmlDeviceGetName", r)
	}
	mem, r := d.GetMemoryInfo()
	if r != nvml.SUCCESS {
		return out, nvmlErr("nvmlDeviceGetMemoryInfo", r)
	}
	out.MemoryBytes = mem.Total
	pci, r := d.GetPciInfo()
	if r != nvml.SUCCESS {
		return out, nvmlErr("nvmlDeviceGetPciInfo", r)
	}
	out.BusID = cString(pci.BusId[:])
	if out.BusID == "" && (pci.Domain|pci.Bus|pci.Device) != 0 {
		out.BusID = formatBusID(uint64(pci.Domain), uint64(pci.Bus), uint64(pci.Device), 0)
	}
	cur, _, r := d.GetMigMode()
	switch r {
	case nvml.SUCCESS:
		out.MIG = cur == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED: // GPUs without MIG
	default:
		return out, nvmlErr("nvmlDeviceGetMigMode", r)
	}
	return out, nil
}

// cString converts NVML's NUL-terminated int8 array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
