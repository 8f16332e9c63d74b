package gpu

import (
	"errors"
	"fmt"
)

// NVML is the part of NVIDIA's management library detection uses. The cgo
// build adapts go-nvml to it (nvml_cgo.go); without cgo every call reports
// ErrNVMLNotBuilt. Keeping it this small lets the logic be tested without cgo.
type NVML interface {
	Init() error
	Shutdown()
	DeviceCount() (int, error)
	Device(index int) (NVMLDevice, error)
	// Driver reads the driver's versions. A part NVML cannot read stays
	// empty: an unknown version leaves the driver unchecked, it breaks nothing.
	Driver() NVMLDriver
}

// NVMLDriver is the host driver as NVML reports it.
type NVMLDriver struct {
	Version string // nvmlSystemGetDriverVersion, e.g. "570.133.20"
	CUDA    int    // nvmlSystemGetCudaDriverVersion, e.g. 12080 (12.8); 0 when unknown
}

// NVMLDevice is what detection reads from one NVML device.
type NVMLDevice struct {
	UUID        string
	Name        string
	MemoryBytes uint64
	BusID       string // as NVML spells it; normalised by detection
	MIG         bool
}

// Errors an NVML implementation returns so detection can classify them.
var (
	// ErrNVMLNotFound: libnvidia-ml.so.1 could not be loaded.
	ErrNVMLNotFound = errors.New("NVML library libnvidia-ml.so.1 not found")
	// ErrNVMLDriverNotLoaded: the library is there, the kernel module is not.
	ErrNVMLDriverNotLoaded = errors.New("NVIDIA kernel driver not loaded")
	// ErrNVMLNotBuilt: this binary was built with CGO_ENABLED=0.
	ErrNVMLNotBuilt = errors.New("this mltrain was built without cgo, so it cannot use NVML")
)

type nvmlState int

const (
	nvmlOK nvmlState = iota
	nvmlAbsent
	nvmlNoDriver
	nvmlNotBuilt
	nvmlFailed
)

const nvmlFix = "run 'nvidia-smi' to see the driver's own error; a driver/library version mismatch after an upgrade needs 'sudo reboot'"

// nvmlResult is what detectNVML found.
type nvmlResult struct {
	gpus     []GPU
	problems []Problem
	state    nvmlState
	driver   NVMLDriver
}

// detectNVML lists NVML's devices in NVML index order. A device NVML cannot
// read is a problem naming its index; the others are still listed.
func detectNVML(nv NVML) nvmlResult {
	if err := nv.Init(); err != nil {
		switch {
		case errors.Is(err, ErrNVMLNotFound):
			return nvmlResult{state: nvmlAbsent}
		case errors.Is(err, ErrNVMLDriverNotLoaded):
			return nvmlResult{state: nvmlNoDriver}
		case errors.Is(err, ErrNVMLNotBuilt):
			return nvmlResult{state: nvmlNotBuilt}
		}
		return nvmlResult{state: nvmlFailed, problems: []Problem{{Code: CodeNVMLError, Vendor: NVIDIA,
			Message: fmt.Sprintf("NVML failed to start: %v", err), Fix: nvmlFix}}}
	}
	defer nv.Shutdown()
	// The driver answers even when a GPU does not, so read it first.
	drv := nv.Driver()
	n, err := nv.DeviceCount()
	if err != nil {
		return nvmlResult{state: nvmlFailed, driver: drv, problems: []Problem{{Code: CodeNVMLError, Vendor: NVIDIA,
			Message: fmt.Sprintf("NVML cannot count the GPUs: %v", err), Fix: nvmlFix}}}
	}
	var gpus []GPU
	var problems []Problem
	for i := 0; i < n; i++ {
		d, err := nv.Device(i)
		if err != nil {
			problems = append(problems, Problem{Code: CodeNVMLError, Vendor: NVIDIA,
				Message: fmt.Sprintf("NVML cannot read GPU %d: %v", i, err), Fix: nvmlFix})
			continue
		}
		bus := d.BusID
		if norm, err := NormalizeBusID(bus); err == nil {
			bus = norm
		}
		g := GPU{Vendor: NVIDIA, Index: i, UUID: d.UUID, Name: d.Name,
			MemoryMiB: int64(d.MemoryBytes >> 20), PCIBusID: bus, MIG: d.MIG, Source: "nvml"}
		gpus = append(gpus, g)
		if d.MIG {
			problems = append(problems, Problem{Code: CodeMIGEnabled, Vendor: NVIDIA,
				Message: fmt.Sprintf("GPU %d (%s) has MIG mode on; each lab worker needs a whole GPU", i, d.UUID),
				Fix:     fmt.Sprintf("sudo nvidia-smi -i %d -mig 0, then reset the GPU ('sudo nvidia-smi -i %d -r') or reboot", i, i)})
		}
	}
	return nvmlResult{gpus: gpus, problems: problems, state: nvmlOK, driver: drv}
}
