//go:build cgo

package gpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busID fills NVML's C string the way the real library does (%08X:%02X:%02X.0).
func busID(s string) [32]int8 {
	var out [32]int8
	for i, c := range []byte(s) {
		out[i] = int8(c)
	}
	return out
}

// mockA100s is go-nvml's DGX A100 mock cut to two GPUs with real PCI bus ids
// (the mock leaves BusId empty), on a driver new enough for CUDA 12.8.
func mockA100s(t *testing.T) *mock.Interface {
	t.Helper()
	devs := []*dgxa100.Device{dgxa100.NewDevice(0), dgxa100.NewDevice(1)}
	for i, d := range devs {
		id := []string{"00000000:17:00.0", "00000000:65:00.0"}[i]
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: busID(id), PciDeviceId: 0x20B010DE}, nvml.SUCCESS
		}
	}
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "570.133.20", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

func TestGoNVMLTwoA100(t *testing.T) {
	lib := mockA100s(t)
	rep := detect(t, "nvidia-driver", FromNVML(lib))
	assert.Empty(t, rep.Problems)
	require.Len(t, rep.GPUs, 2)
	for i, g := range rep.GPUs {
		assert.Equal(t, NVIDIA, g.Vendor)
		assert.Equal(t, i, g.Index)
		assert.Regexp(t, `^GPU-[0-9a-f-]{36}$`, g.UUID)
		assert.Equal(t, "Mock NVIDIA A100-SXM4-40GB", g.Name)
		assert.Equal(t, int64(40960), g.MemoryMiB)
		assert.False(t, g.MIG)
		assert.Equal(t, "nvml", g.Source)
	}
	assert.NotEqual(t, rep.GPUs[0].UUID, rep.GPUs[1].UUID, "each GPU keeps its own UUID")
	assert.Equal(t, "0000:17:00.0", rep.GPUs[0].PCIBusID)
	assert.Equal(t, "0000:65:00.0", rep.GPUs[1].PCIBusID)
	assert.Len(t, lib.ShutdownCalls(), 1)
}

func TestGoNVMLLibraryNotFound(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	rep := detect(t, "nvidia-driver", FromNVML(lib))
	assert.Empty(t, rep.GPUs)
	require.Equal(t, []string{CodeLibraryMissing}, codes(rep))
	assert.Empty(t, lib.DeviceGetCountCalls(), "no device calls after a failed Init")

	// With no NVIDIA hardware either, a missing library is simply "no GPU".
	rep = detect(t, "none", FromNVML(lib))
	require.Equal(t, []string{CodeNoGPU}, codes(rep))
}

func TestGoNVMLOneDeviceErrors(t *testing.T) {
	lib := mockA100s(t)
	broken, _ := lib.DeviceGetHandleByIndex(1)
	broken.(*dgxa100.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
	}
	rep := detect(t, "nvidia-driver", FromNVML(lib))
	require.Len(t, rep.GPUs, 1)
	assert.Equal(t, "0000:17:00.0", rep.GPUs[0].PCIBusID)
	require.Equal(t, []string{CodeNVMLError}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "GPU 1")
	assert.Contains(t, rep.Problems[0].Message, "nvmlDeviceGetMemoryInfo")
}

func TestGoNVMLMIGNotSupportedIsOff(t *testing.T) {
	lib := mockA100s(t)
	d, _ := lib.DeviceGetHandleByIndex(0)
	d.(*dgxa100.Device).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	d1, _ := lib.DeviceGetHandleByIndex(1)
	d1.(*dgxa100.Device).GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, 0, nvml.SUCCESS }
	rep := detect(t, "nvidia-driver", FromNVML(lib))
	require.Len(t, rep.GPUs, 2)
	assert.False(t, rep.GPUs[0].MIG)
	assert.True(t, rep.GPUs[1].MIG)
}

// The real library through go-nvml's dlopen: on a host without NVIDIA's
// library (this CI machine) Init must say "not found", never crash.
func TestSystemNVML(t *testing.T) {
	nv := systemNVML()
	err := nv.Init()
	if err != nil {
		assert.ErrorIs(t, err, ErrNVMLNotFound)
		res := detectNVML(nv)
		assert.Empty(t, res.gpus)
		assert.Empty(t, res.problems)
		assert.Equal(t, nvmlAbsent, res.state)
		assert.Empty(t, res.driver.Version, "no library, no driver version")
		return
	}
	defer nv.Shutdown()
	n, err := nv.DeviceCount()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 0)
}

// The driver's versions come from NVML and decide the driver check: the
// mock's answers stand for a new, an old-major, a 12.x-but-pre-12.8 and an
// unreadable driver.
func TestGoNVMLDriverAgainstTheCUDAImage(t *testing.T) {
	lib := mockA100s(t)
	rep := detect(t, "nvidia-driver", FromNVML(lib))
	assert.Equal(t, "570.133.20", rep.NVIDIADriver)
	assert.Equal(t, "12.8", rep.CUDADriver)
	assert.Empty(t, CheckDriver(rep, testNeed), "570 runs CUDA 12.8 fully")
	assert.Len(t, lib.SystemGetDriverVersionCalls(), 1)

	lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "515.65.01", nvml.SUCCESS }
	lib.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 11070, nvml.SUCCESS }
	rep = detect(t, "nvidia-driver", FromNVML(lib))
	ps := CheckDriver(rep, testNeed)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeDriverTooOld, ps[0].Code)
	assert.False(t, ps[0].Warning())
	assert.Contains(t, ps[0].Message, "NVIDIA driver 515.65.01 (CUDA 11.7) is too old")
	assert.Contains(t, ps[0].Message, "needs NVIDIA driver 525.60.13 or newer")
	assert.Contains(t, ps[0].Fix, "sudo apt install nvidia-driver-570-server")
	assert.Contains(t, ps[0].Fix, "built for CUDA 11.7 or older: 'mltrain up --image-worker IMAGE'")

	// go-nvml's own DGX A100 server mock runs 550.54.15, a CUDA 12.4 driver.
	srv := dgxa100.New()
	rep = detect(t, "none", FromNVML(&srv.Interface))
	require.Len(t, rep.GPUs, 8)
	assert.Equal(t, "550.54.15", rep.NVIDIADriver)
	assert.Equal(t, "12.4", rep.CUDADriver)
	ps = CheckDriver(rep, testNeed)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeDriverCompat, ps[0].Code)
	assert.True(t, ps[0].Warning())

	lib = mockA100s(t)
	lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	lib.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	rep = detect(t, "nvidia-driver", FromNVML(lib))
	require.Len(t, rep.GPUs, 2, "an unreadable version costs nothing but the check")
	assert.Empty(t, rep.Problems)
	assert.Empty(t, rep.NVIDIADriver)
	assert.Empty(t, rep.CUDADriver)
	ps = CheckDriver(rep, testNeed)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeDriverUnchecked, ps[0].Code)
	assert.True(t, ps[0].Warning())
	assert.Contains(t, ps[0].Message, "NVML did not report the driver's version")
}
