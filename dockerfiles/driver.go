package dockerfiles

import (
	"strings"

	"github.com/mltrain/mltrain/internal/gpu"
)

// The accelerator stacks the worker images carry, and the host drivers they
// need. This is the one place for them: the Dockerfiles' ARG defaults repeat
// them and a test keeps both equal; doctor and up take DriverNeed from here.
const (
	// CUDA is the CUDA runtime of the CUDA worker's PyTorch: the wheels come
	// from PyTorch's cu128 index and bundle their own CUDA 12.8 libraries
	// (torch 2.10.0+cu128 pins nvidia-cuda-runtime-cu12==12.8.90, 12.8
	// Update 1). Its base, rayproject/ray:<ver>-gpu (an alias of -cu121),
	// carries CUDA 12.1, which needs no newer driver than this.
	CUDA = "12.8"

	// CUDAMinDriver is the oldest driver a CUDA 12.x runtime runs on at all:
	// from CUDA 11 on, a runtime works on any driver of its major release
	// through minor-version compatibility, and for 12.x that is >= 525.60.13
	// on Linux (CUDA Toolkit release notes, table "CUDA Toolkit and Minimum
	// Required Driver Version for CUDA Minor Version Compatibility";
	// docs.nvidia.com/deploy/cuda-compatibility). Older drivers (the CUDA 11
	// R450-R520 families) cannot load the runtime at all: a hard failure.
	CUDAMinDriver = "525.60.13"

	// CUDAFullDriver is the driver CUDA 12.8 GA shipped with (>= 570.26 on
	// Linux; 12.8 Update 1 lists 570.124.06, same PTX ISA). On drivers between
	// the two, minor-version compatibility runs the runtime "with limited
	// feature-set": PyTorch's prebuilt SASS kernels (sm_80 for the A100) work,
	// but PTX produced by the 12.8 toolchain cannot be JIT-compiled by the
	// older driver (cudaErrorUnsupportedPtxVersion) and 12.8 APIs the driver
	// lacks return cudaErrorCallRequiresNewerDriver. The lab uses neither, so
	// that range is a warning, not a failure.
	CUDAFullDriver = "570.26"

	// ROCm is the ROCm user space of the ROCm worker (amdgpu-install
	// --usecase=rocm --no-dkms) and of its PyTorch wheels (index rocm7.0).
	ROCm = "7.0.1"
	// AMDGPUInstallDeb is the amdgpu-install package of that release, which
	// the image installs and the host's driver fix names.
	AMDGPUInstallDeb = "amdgpu-install_7.0.1.70001-1_all.deb"

	// ROCmMinDriverRelease is the oldest AMD GPU driver release ROCm 7.0.x is
	// supported on ("User and AMD GPU Driver (amdgpu) support matrix",
	// rocm.docs.amd.com/projects/install-on-linux: 30.10.x, 6.4.x, 6.3.x and
	// 6.2.x list 7.0.x; 6.1.x does not). Older drivers lack kernel interfaces
	// the newer user space uses, so that is a hard failure.
	ROCmMinDriverRelease = "6.2"
	// ROCmMinAMDGPUModule is what /sys/module/amdgpu/version shows for that
	// release: the amdgpu-dkms packages are versioned <module>.<release>, e.g.
	// 1:6.8.5.60200 (ROCm 6.2), 6.10.5.60300 (6.3), 6.12.12.60400 (6.4),
	// 6.14.14.30100100 (30.10.1), and the module reports the first part.
	ROCmMinAMDGPUModule = "6.8.5"
)

// DriverNeed is what the worker images need from the host's driver, for
// gpu.CheckDriver (doctor, and the lab's preflight before up and render).
func DriverNeed() gpu.DriverNeed {
	return gpu.DriverNeed{
		CUDA: gpu.CUDANeed{
			Image:      "the CUDA worker image (PyTorch cu" + strings.ReplaceAll(CUDA, ".", "") + ")",
			Version:    CUDA,
			MinDriver:  CUDAMinDriver,
			FullDriver: CUDAFullDriver,
		},
		ROCm: gpu.ROCmNeed{
			Image:      "the ROCm worker image",
			Version:    ROCm,
			MinRelease: ROCmMinDriverRelease,
			MinModule:  ROCmMinAMDGPUModule,
			Install: "wget https://repo.radeon.com/amdgpu-install/" + ROCm + "/ubuntu/$(. /etc/os-release; echo $VERSION_CODENAME)/" + AMDGPUInstallDeb +
				" && sudo apt install ./" + AMDGPUInstallDeb + " && sudo amdgpu-install -y --usecase=dkms",
		},
	}
}
