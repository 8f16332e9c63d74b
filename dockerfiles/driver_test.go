package dockerfiles

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/images"
)

// checkAccelerator reports where a worker Dockerfile disagrees with the
// package's CUDA/ROCm constants.
func checkAccelerator(k Kind, df []byte) error {
	args := images.ArgDefaults(df)
	want := map[string]string{}
	switch k {
	case RayCUDA:
		want["TORCH_INDEX"] = "https://download.pytorch.org/whl/cu" + strings.ReplaceAll(CUDA, ".", "")
	case RayROCm:
		v := strings.Split(ROCm, ".")
		if len(v) != 3 {
			return fmt.Errorf("ROCm %q is not major.minor.patch", ROCm)
		}
		want["ROCM_VERSION"] = ROCm
		want["AMDGPU_INSTALL_DEB"] = AMDGPUInstallDeb
		want["TORCH_INDEX"] = "https://download.pytorch.org/whl/rocm" + v[0] + "." + v[1]
		// amdgpu-install_7.0.1.70001-1_all.deb: the release, then it packed as MMmmpp.
		var packed int
		for _, p := range v {
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("ROCm %q: %w", ROCm, err)
			}
			packed = packed*100 + n
		}
		if prefix := fmt.Sprintf("amdgpu-install_%s.%d-", ROCm, packed); !strings.HasPrefix(AMDGPUInstallDeb, prefix) {
			return fmt.Errorf("AMDGPUInstallDeb %q is not the package of ROCm %s (want %s...)", AMDGPUInstallDeb, ROCm, prefix)
		}
	}
	for name, w := range want {
		got := args[name]
		if len(got) == 0 {
			return fmt.Errorf("%s declares no ARG %s (want %q)", k, name, w)
		}
		for _, g := range got {
			if g != w {
				return fmt.Errorf("%s: ARG %s=%s, but the package says %s", k, name, g, w)
			}
		}
	}
	return nil
}

// The CUDA and ROCm the driver check assumes are the ones the Dockerfiles
// install: changing one without the other fails here.
func TestAcceleratorVersionsMatchTheDockerfiles(t *testing.T) {
	for _, k := range []Kind{RayCUDA, RayROCm} {
		df, err := Dockerfile(k)
		require.NoError(t, err)
		assert.NoError(t, checkAccelerator(k, df))
	}
	rocm, err := Dockerfile(RayROCm)
	require.NoError(t, err)
	assert.Contains(t, string(rocm), `mltrain.rocm.version="${ROCM_VERSION}"`)

	// The check can fail: a worker moved to another wheel index or ROCm.
	cuda, err := Dockerfile(RayCUDA)
	require.NoError(t, err)
	moved := strings.Replace(string(cuda), "whl/cu128", "whl/cu126", 1)
	require.NotEqual(t, string(cuda), moved, "the CUDA Dockerfile names the cu128 index")
	assert.ErrorContains(t, checkAccelerator(RayCUDA, []byte(moved)), "TORCH_INDEX=https://download.pytorch.org/whl/cu126")
	moved = strings.Replace(string(rocm), "ARG ROCM_VERSION=7.0.1", "ARG ROCM_VERSION=6.4.3", 1)
	require.NotEqual(t, string(rocm), moved)
	assert.ErrorContains(t, checkAccelerator(RayROCm, []byte(moved)), "ROCM_VERSION=6.4.3")
	assert.ErrorContains(t, checkAccelerator(RayROCm, []byte("FROM x:1\n")), "declares no ARG")
}

// The need decides as its comments say, at the documented boundaries.
func TestDriverNeedDecides(t *testing.T) {
	need := DriverNeed()
	nv := func(driver, cuda string) []gpu.Problem {
		return gpu.CheckDriver(gpu.Report{GPUs: []gpu.GPU{{Vendor: gpu.NVIDIA}}, NVIDIADriver: driver, CUDADriver: cuda}, need)
	}
	assert.Empty(t, nv("570.26", "12.8"))
	assert.Empty(t, nv("580.82.07", "13.0"))
	ps := nv("550.54.15", "12.4")
	require.Len(t, ps, 1)
	assert.Equal(t, gpu.CodeDriverCompat, ps[0].Code)
	ps = nv("525.60.12", "12.0")
	require.Len(t, ps, 1)
	assert.Equal(t, gpu.CodeDriverTooOld, ps[0].Code)
	assert.Contains(t, ps[0].Message, "the CUDA worker image (PyTorch cu128) carries CUDA 12.8")
	assert.Contains(t, ps[0].Fix, "nvidia-driver-570-server")

	amd := func(module string) []gpu.Problem {
		return gpu.CheckDriver(gpu.Report{GPUs: []gpu.GPU{{Vendor: gpu.AMD}}, AMDGPUDriver: module}, need)
	}
	assert.Empty(t, amd("6.8.5"))
	assert.Empty(t, amd("6.14.14"))
	ps = amd("6.7.0")
	require.Len(t, ps, 1)
	assert.Equal(t, gpu.CodeDriverTooOld, ps[0].Code)
	assert.Contains(t, ps[0].Fix, "https://repo.radeon.com/amdgpu-install/7.0.1/ubuntu/$(. /etc/os-release; echo $VERSION_CODENAME)/amdgpu-install_7.0.1.70001-1_all.deb")
	assert.Contains(t, ps[0].Fix, "sudo amdgpu-install -y --usecase=dkms")
}
