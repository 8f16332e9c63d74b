package gpu

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testNeed mirrors dockerfiles.DriverNeed() (which this package cannot
// import); dockerfiles' own test pins the real values.
var testNeed = DriverNeed{
	CUDA: CUDANeed{Image: "the CUDA worker image", Version: "12.8", MinDriver: "525.60.13", FullDriver: "570.26"},
	ROCm: ROCmNeed{Image: "the ROCm worker image", Version: "7.0.1", MinRelease: "6.2", MinModule: "6.8.5",
		Install: "sudo amdgpu-install -y --usecase=dkms"},
}

func nvidiaHost(driver, cuda string) Report {
	return Report{GPUs: []GPU{{Vendor: NVIDIA}, {Vendor: NVIDIA, Index: 1}}, NVIDIADriver: driver, CUDADriver: cuda}
}

func amdHost(module string) Report {
	return Report{GPUs: []GPU{{Vendor: AMD}}, AMDGPUDriver: module}
}

func TestCheckDriverNVIDIABoundaries(t *testing.T) {
	for _, tc := range []struct {
		driver, cuda string
		want         string // "" = passes
	}{
		{"570.26", "12.8", ""},
		{"570.133.20", "12.8", ""},
		{"580.65.06", "13.0", ""}, // newer majors run older runtimes (backward compatibility)
		{"570.25.99", "12.8", CodeDriverCompat},
		{"550.54.15", "12.4", CodeDriverCompat},
		{"525.60.13", "12.0", CodeDriverCompat}, // the minor-version compatibility floor itself
		{"525.60.12", "12.0", CodeDriverTooOld},
		{"515.65.01", "11.7", CodeDriverTooOld},
		{"470.256.02", "", CodeDriverTooOld},
		// NVML gave only the CUDA version: its major still decides.
		{"", "12.8", ""},
		{"", "12.4", CodeDriverCompat},
		{"", "11.8", CodeDriverTooOld},
		{"", "", CodeDriverUnchecked},
		{"not-a-version", "", CodeDriverUnchecked},
	} {
		ps := CheckDriver(nvidiaHost(tc.driver, tc.cuda), testNeed)
		if tc.want == "" {
			assert.Empty(t, ps, "%s/%s", tc.driver, tc.cuda)
			continue
		}
		if assert.Len(t, ps, 1, "%s/%s", tc.driver, tc.cuda) {
			assert.Equal(t, tc.want, ps[0].Code, "%s/%s", tc.driver, tc.cuda)
			assert.Equal(t, NVIDIA, ps[0].Vendor)
			assert.Equal(t, tc.want != CodeDriverTooOld, ps[0].Warning(), "only too-old stops the lab")
			assert.NotEmpty(t, ps[0].Fix)
		}
	}
}

func TestCheckDriverNVIDIAMessagesNameBothVersions(t *testing.T) {
	p := CheckDriver(nvidiaHost("515.65.01", "11.7"), testNeed)[0]
	assert.Equal(t, `NVIDIA driver 515.65.01 (CUDA 11.7) is too old: the CUDA worker image carries CUDA 12.8, which needs NVIDIA driver 525.60.13 or newer (570.26 or newer for all of CUDA 12.8); PyTorch would say "The NVIDIA driver on your system is too old" and every GPU job would fail`, p.Message)
	assert.Equal(t, "upgrade the NVIDIA driver to 570.26 or newer (Ubuntu: 'sudo apt install nvidia-driver-570-server', then 'sudo reboot'; 'nvidia-smi' then shows CUDA Version 12.8 or higher); or replace the worker image with one whose PyTorch is built for CUDA 11.7 or older: 'mltrain up --image-worker IMAGE'", p.Fix)

	p = CheckDriver(nvidiaHost("470.256.02", ""), testNeed)[0]
	assert.Contains(t, p.Fix, "built for an older CUDA:")

	p = CheckDriver(nvidiaHost("550.54.15", "12.4"), testNeed)[0]
	assert.Contains(t, p.Message, "NVIDIA driver 550.54.15 (CUDA 12.4) predates CUDA 12.8")
	assert.Contains(t, p.Message, "minor-version compatibility")
	assert.Contains(t, p.Message, "cudaErrorUnsupportedPtxVersion")
	assert.Contains(t, p.Fix, "upgrade the NVIDIA driver to 570.26 or newer")

	p = CheckDriver(nvidiaHost("", ""), testNeed)[0]
	assert.Contains(t, p.Message, "NVIDIA driver not checked: NVML did not report the driver's version")
	assert.Contains(t, p.Fix, "'CUDA Version' must be 12.8 or higher")
	p = CheckDriver(nvidiaHost("bogus", ""), testNeed)[0]
	assert.Contains(t, p.Message, `its version "bogus" could not be read`)
}

func TestCheckDriverAMD(t *testing.T) {
	for _, tc := range []struct{ module, want string }{
		{"6.8.5", ""},   // the driver of ROCm 6.2, the oldest AMD supports ROCm 7.0.x on
		{"6.12.12", ""}, // ROCm 6.4's
		{"6.16.13", ""}, // 30.30's
		{"6.7.0", CodeDriverTooOld},
		{"6.8.4", CodeDriverTooOld},
		{"", CodeDriverUnchecked},
		{"6.8.5-rc1", CodeDriverUnchecked},
	} {
		ps := CheckDriver(amdHost(tc.module), testNeed)
		if tc.want == "" {
			assert.Empty(t, ps, tc.module)
			continue
		}
		if assert.Len(t, ps, 1, tc.module) {
			assert.Equal(t, tc.want, ps[0].Code, tc.module)
			assert.Equal(t, AMD, ps[0].Vendor)
		}
	}
	p := CheckDriver(amdHost("6.7.0"), testNeed)[0]
	assert.Equal(t, "amdgpu driver 6.7.0 is too old: the ROCm worker image carries ROCm 7.0.1, which AMD supports on its amdgpu driver 6.2 or newer (module version 6.8.5), so GPU jobs would fail in the HIP runtime", p.Message)
	assert.Contains(t, p.Fix, "install AMD's amdgpu driver for ROCm 7.0.1 (sudo amdgpu-install -y --usecase=dkms), then 'sudo reboot'")
	assert.Contains(t, p.Fix, "'mltrain up --image-worker IMAGE'")

	p = CheckDriver(amdHost(""), testNeed)[0]
	assert.Contains(t, p.Message, "/sys/module/amdgpu/version is absent")
	assert.True(t, p.Warning())
}

func TestCheckDriverNothingToCheck(t *testing.T) {
	assert.Empty(t, CheckDriver(Report{}, testNeed), "a CPU rehearsal needs no driver")
	assert.Empty(t, CheckDriver(Report{NVIDIADriver: "390.1"}, testNeed), "a driver without GPUs is not the lab's")

	both := Report{GPUs: []GPU{{Vendor: NVIDIA}, {Vendor: AMD}}, NVIDIADriver: "515.65.01", AMDGPUDriver: "6.7.0"}
	ps := CheckDriver(both, testNeed)
	require.Len(t, ps, 2)
	assert.Equal(t, []Vendor{NVIDIA, AMD}, []Vendor{ps[0].Vendor, ps[1].Vendor})

	// A caller that forgot the need gets "unchecked", never a silent pass.
	ps = CheckDriver(both, DriverNeed{})
	require.Len(t, ps, 2)
	assert.Equal(t, CodeDriverUnchecked, ps[0].Code)
	assert.Equal(t, CodeDriverUnchecked, ps[1].Code)
}

func TestDriverSummaryAndDescribe(t *testing.T) {
	assert.Equal(t, "NVIDIA driver 570.133.20 (CUDA 12.8)", nvidiaHost("570.133.20", "12.8").DriverSummary(NVIDIA))
	assert.Equal(t, "NVIDIA driver 570.133.20", nvidiaHost("570.133.20", "").DriverSummary(NVIDIA))
	assert.Equal(t, "NVIDIA driver (CUDA 12.8)", nvidiaHost("", "12.8").DriverSummary(NVIDIA))
	assert.Equal(t, "NVIDIA driver (version unknown)", nvidiaHost("", "").DriverSummary(NVIDIA))
	assert.Equal(t, "amdgpu driver 6.12.12", amdHost("6.12.12").DriverSummary(AMD))
	assert.Equal(t, "amdgpu driver (version unknown)", amdHost("").DriverSummary(AMD))
	assert.Equal(t, "the CUDA worker image carries CUDA 12.8: NVIDIA driver 570.26 or newer", testNeed.Describe(NVIDIA))
	assert.Equal(t, "the ROCm worker image carries ROCm 7.0.1: amdgpu driver 6.2 or newer (module version 6.8.5)", testNeed.Describe(AMD))
}

func TestFormatCUDAVersion(t *testing.T) {
	for v, want := range map[int]string{12080: "12.8", 12040: "12.4", 11070: "11.7", 13000: "13.0", 12090: "12.9", 0: "", -1: ""} {
		assert.Equal(t, want, FormatCUDAVersion(v), v)
	}
}

func TestParseAndCompareVersions(t *testing.T) {
	for _, ok := range []string{"570.26", "575.51.03", "6.12.12", "12.8", "7"} {
		_, err := parseVersion(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "1..2", "+1.2", "-1", "1.a", " 1", "1.2.", "6.8.5-rc1"} {
		_, err := parseVersion(bad)
		assert.Error(t, err, bad)
	}
	cmp := func(a, b string) int {
		x, err := parseVersion(a)
		require.NoError(t, err)
		y, err := parseVersion(b)
		require.NoError(t, err)
		return compareVersions(x, y)
	}
	assert.Equal(t, 0, cmp("570.26", "570.26.0"))
	assert.Equal(t, -1, cmp("570.26", "570.124.06"), "numeric, not lexical")
	assert.Equal(t, 1, cmp("6.10.5", "6.8.5"), "numeric, not lexical")
	assert.Equal(t, -1, cmp("525.60.12", "525.60.13"))
	assert.Equal(t, 0, cmp("575.51.03", "575.51.3"))
}

// The amdgpu module's version is read from the fixture host's sysfs.
func TestDetectReadsTheAMDGPUModuleVersion(t *testing.T) {
	rep := detect(t, "mi100x2", nil)
	assert.Equal(t, "6.12.12", rep.AMDGPUDriver)
	assert.Empty(t, rep.NVIDIADriver)
	assert.Empty(t, CheckDriver(rep, testNeed))

	rep = detect(t, "mi100x1", nil) // the kernel's own amdgpu: loaded, no version file
	assert.Empty(t, rep.AMDGPUDriver)
	ps := CheckDriver(rep, testNeed)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeDriverUnchecked, ps[0].Code)

	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("testdata/mi100x2")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/module/amdgpu/version"), []byte("6.7.0\n"), 0o644))
	rep, err := Detect(context.Background(), Options{Root: root})
	require.NoError(t, err)
	assert.Equal(t, "6.7.0", rep.AMDGPUDriver)
	ps = CheckDriver(rep, testNeed)
	require.Len(t, ps, 1)
	assert.Equal(t, CodeDriverTooOld, ps[0].Code)
}
