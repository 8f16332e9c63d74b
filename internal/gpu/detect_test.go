package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

// fakeNVML scripts NVML's answers without cgo.
type fakeNVML struct {
	initErr  error
	countErr error
	devices  []NVMLDevice
	devErr   map[int]error
	driver   NVMLDriver
	shutdown int
}

func (f *fakeNVML) Init() error { return f.initErr }
func (f *fakeNVML) Shutdown()   { f.shutdown++ }
func (f *fakeNVML) Driver() NVMLDriver {
	if f.initErr != nil {
		panic("NVML Driver called before a successful Init") // the real library returns ERROR_UNINITIALIZED
	}
	return f.driver
}
func (f *fakeNVML) DeviceCount() (int, error) {
	return len(f.devices), f.countErr
}
func (f *fakeNVML) Device(i int) (NVMLDevice, error) {
	if err := f.devErr[i]; err != nil {
		return NVMLDevice{}, err
	}
	return f.devices[i], nil
}

func twoA100() *fakeNVML {
	return &fakeNVML{devices: []NVMLDevice{
		{UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000001", Name: "NVIDIA A100-PCIE-40GB", MemoryBytes: 40 << 30, BusID: "00000000:17:00.0"},
		{UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000002", Name: "NVIDIA A100-PCIE-40GB", MemoryBytes: 40 << 30, BusID: "00000000:65:00.0"},
	}}
}

func detect(t *testing.T, fixture string, nv NVML) Report {
	t.Helper()
	rep, err := Detect(context.Background(), Options{Root: filepath.Join("testdata", fixture), NVML: nv})
	require.NoError(t, err)
	require.NotNil(t, rep.GPUs)
	require.NotNil(t, rep.Problems)
	return rep
}

func codes(r Report) []string {
	out := []string{}
	for _, p := range r.Problems {
		out = append(out, p.Code)
	}
	return out
}

func TestDetectTwoMI100InNumericNodeOrder(t *testing.T) {
	rep := detect(t, "mi100x2", nil)
	assert.Empty(t, rep.Problems)
	require.Len(t, rep.GPUs, 2)
	// Node 2 comes before node 10 although "10" < "2" as strings.
	assert.Equal(t, GPU{Vendor: AMD, Index: 0, UUID: "GPU-3930312f94501209", Name: "AMD Instinct MI100",
		MemoryMiB: 32752, PCIBusID: "0000:43:00.0", RenderNode: "/dev/dri/renderD128", KFDGPUID: 51234, Source: "kfd"}, rep.GPUs[0])
	assert.Equal(t, 1, rep.GPUs[1].Index)
	assert.Equal(t, "0000:c3:00.0", rep.GPUs[1].PCIBusID)
	assert.Equal(t, "/dev/dri/renderD129", rep.GPUs[1].RenderNode)
	assert.Equal(t, fmt.Sprintf("GPU-%016x", uint64(1234567890123456789)), rep.GPUs[1].UUID)
	assert.NotEqual(t, rep.GPUs[0].UUID, rep.GPUs[1].UUID)
	assert.Equal(t, AMD, rep.Vendor())
	assert.False(t, rep.HardwareWithoutDriver())
}

func TestDetectOneGPUUsesBoardProductName(t *testing.T) {
	rep := detect(t, "mi100x1", nil)
	assert.Empty(t, rep.Problems)
	require.Len(t, rep.GPUs, 1)
	assert.Equal(t, "Instinct MI100 (FRU)", rep.GPUs[0].Name)
	assert.Equal(t, 0, rep.GPUs[0].Index)
}

func TestDetectNVIDIAWithoutDriverNamesTheDriver(t *testing.T) {
	rep := detect(t, "nvidia-nodriver", nil)
	assert.Empty(t, rep.GPUs)
	require.Equal(t, []string{CodeDriverMissing}, codes(rep))
	p := rep.Problems[0]
	assert.Contains(t, p.Message, "nvidia kernel driver")
	assert.Contains(t, p.Message, "0000:17:00.0")
	assert.Contains(t, p.Message, "0000:65:00.0 (bound to vfio-pci)")
	assert.Contains(t, p.Fix, "nvidia-smi")
	assert.Equal(t, NVIDIA, p.Vendor)
	assert.True(t, rep.HardwareWithoutDriver())
}

func TestDetectNVIDIADriverButNoLibrary(t *testing.T) {
	// Under a fixture root NVML counts as absent.
	rep := detect(t, "nvidia-driver", nil)
	require.Equal(t, []string{CodeLibraryMissing}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "libnvidia-ml.so.1")
	assert.Contains(t, rep.Problems[0].Message, "0000:17:00.0, 0000:65:00.0")
	assert.True(t, rep.HardwareWithoutDriver())

	rep = detect(t, "nvidia-driver", &fakeNVML{initErr: ErrNVMLNotBuilt})
	require.Equal(t, []string{CodeLibraryMissing}, codes(rep))
	assert.Contains(t, rep.Problems[0].Fix, "CGO_ENABLED=1")
}

func TestDetectNVIDIADriverNotLoaded(t *testing.T) {
	rep := detect(t, "nvidia-driver", &fakeNVML{initErr: fmt.Errorf("init: %w", ErrNVMLDriverNotLoaded)})
	require.Equal(t, []string{CodeDriverMissing}, codes(rep))
}

func TestDetectNVIDIAThroughNVMLMatchesPCI(t *testing.T) {
	nv := twoA100()
	nv.driver = NVMLDriver{Version: "570.133.20", CUDA: 12080}
	rep := detect(t, "nvidia-driver", nv)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, "570.133.20", rep.NVIDIADriver)
	assert.Equal(t, "12.8", rep.CUDADriver)
	assert.Empty(t, rep.AMDGPUDriver)
	require.Len(t, rep.GPUs, 2)
	assert.Equal(t, "0000:17:00.0", rep.GPUs[0].PCIBusID)
	assert.Equal(t, int64(40960), rep.GPUs[0].MemoryMiB)
	assert.Equal(t, "nvml", rep.GPUs[1].Source)
	assert.Equal(t, 1, nv.shutdown, "NVML is shut down after use")
}

func TestDetectNVMLOneDeviceFails(t *testing.T) {
	nv := twoA100()
	nv.devErr = map[int]error{1: errors.New("nvmlDeviceGetUUID: ERROR_GPU_IS_LOST")}
	rep := detect(t, "nvidia-driver", nv)
	require.Len(t, rep.GPUs, 1)
	require.Equal(t, []string{CodeNVMLError}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "GPU 1")
	assert.Contains(t, rep.Problems[0].Message, "ERROR_GPU_IS_LOST")
	assert.True(t, rep.HardwareWithoutDriver())
}

func TestDetectNVMLInitFails(t *testing.T) {
	rep := detect(t, "nvidia-driver", &fakeNVML{initErr: errors.New("nvmlInit: Driver/library version mismatch")})
	require.Equal(t, []string{CodeNVMLError}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "version mismatch")
}

func TestDetectMIGIsFlagged(t *testing.T) {
	nv := twoA100()
	nv.devices[0].MIG = true
	rep := detect(t, "nvidia-driver", nv)
	require.Len(t, rep.GPUs, 2)
	assert.True(t, rep.GPUs[0].MIG)
	require.Equal(t, []string{CodeMIGEnabled}, codes(rep))
	assert.Contains(t, rep.Problems[0].Fix, "nvidia-smi -i 0 -mig 0")
}

func TestDetectNoGPU(t *testing.T) {
	rep := detect(t, "none", nil)
	assert.Empty(t, rep.GPUs)
	require.Equal(t, []string{CodeNoGPU}, codes(rep))
	assert.False(t, rep.HardwareWithoutDriver(), "no hardware means a CPU rehearsal, not a broken driver")
}

func TestDetectGarbagePropertiesNamesTheFile(t *testing.T) {
	rep := detect(t, "garbage", nil)
	require.Len(t, rep.GPUs, 1, "the good node is still listed")
	assert.Equal(t, "0000:c3:00.0", rep.GPUs[0].PCIBusID)
	assert.Equal(t, 0, rep.GPUs[0].Index)
	require.Equal(t, []string{CodeKFDTopology}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, filepath.Join("nodes", "1", "properties"))
	assert.NotEmpty(t, rep.Problems[0].Fix)
}

func TestDetectAMDWithoutKFD(t *testing.T) {
	rep := detect(t, "amd-nokfd", nil)
	require.Equal(t, []string{CodeKFDMissing}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "0000:43:00.0")
}

func TestDetectAMDWithoutDriver(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/bus/pci/devices/0000:43:00.0")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "vendor"), []byte("0x1002\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "class"), []byte("0x120000\n"), 0o644))
	rep, err := Detect(context.Background(), Options{Root: root})
	require.NoError(t, err)
	require.Equal(t, []string{CodeDriverMissing}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "amdgpu")
	assert.Contains(t, rep.Problems[0].Fix, "amdgpu-install")
}

func TestDetectUnreadableGPUIDAndNoRenderNode(t *testing.T) {
	root := t.TempDir()
	n := filepath.Join(root, kfdNodes, "1")
	require.NoError(t, os.MkdirAll(n, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(n, "gpu_id"), []byte("abc\n"), 0o644))
	m := filepath.Join(root, kfdNodes, "2")
	require.NoError(t, os.MkdirAll(m, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(m, "properties"), []byte("simd_count 10\nlocal_mem_size 1048576\n"), 0o644))
	rep, err := Detect(context.Background(), Options{Root: root})
	require.NoError(t, err)
	require.Equal(t, []string{CodeKFDTopology, CodeKFDTopology}, codes(rep))
	assert.Contains(t, rep.Problems[0].Message, "gpu_id")
	assert.Contains(t, rep.Problems[1].Message, "drm_render_minor")
}

func TestDetectMissingRootIsAnErrorNamingIt(t *testing.T) {
	t.Setenv(RootEnv, "/nonexistent/fixture")
	rep, err := Detect(context.Background(), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MLTRAIN_SYSFS_ROOT=/nonexistent/fixture")
	assert.Contains(t, clierr.Hint(err), "unset MLTRAIN_SYSFS_ROOT")
	assert.NotNil(t, rep.GPUs)
}

func TestDetectHonoursEnvRoot(t *testing.T) {
	abs, err := filepath.Abs("testdata/mi100x1")
	require.NoError(t, err)
	t.Setenv(RootEnv, abs)
	rep, err := Detect(context.Background(), Options{})
	require.NoError(t, err)
	require.Len(t, rep.GPUs, 1)
}

func TestReportJSONIsStable(t *testing.T) {
	rep := detect(t, "mi100x1", nil)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.JSONEq(t, `{"gpus":[{"vendor":"amd","index":0,"uuid":"GPU-3930312f94501209","name":"Instinct MI100 (FRU)",
		"memory_mib":32752,"pci_bus_id":"0000:43:00.0","render_node":"/dev/dri/renderD128","kfd_gpu_id":51234,"source":"kfd"}],
		"problems":[]}`, string(b))
	rep = detect(t, "mi100x2", nil)
	rep.NVIDIADriver, rep.CUDADriver = "570.133.20", "12.8"
	b, err = json.Marshal(rep)
	require.NoError(t, err)
	var top map[string]any
	require.NoError(t, json.Unmarshal(b, &top))
	assert.ElementsMatch(t, []string{"gpus", "problems", "nvidia_driver_version", "cuda_driver_version", "amdgpu_driver_version"}, keys(top))
	assert.Equal(t, "6.12.12", top["amdgpu_driver_version"])
	assert.Equal(t, "12.8", top["cuda_driver_version"])

	rep = detect(t, "nvidia-nodriver", nil)
	b, err = json.Marshal(rep)
	require.NoError(t, err)
	var generic map[string][]map[string]any
	require.NoError(t, json.Unmarshal(b, &generic))
	assert.Equal(t, []map[string]any{}, generic["gpus"], "gpus is [] not null")
	require.Len(t, generic["problems"], 1)
	assert.ElementsMatch(t, []string{"code", "message", "fix"}, keys(generic["problems"][0]))
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestAMDName(t *testing.T) {
	assert.Equal(t, "AMD Instinct MI210", AMDName(0x740f))
	assert.Equal(t, "AMD Instinct MI300X", AMDName(0x74a1))
	assert.Equal(t, "AMD GPU 0x1234", AMDName(0x1234))
}
