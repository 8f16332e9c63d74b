package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
)

// need mirrors dockerfiles.DriverNeed(), which internal packages cannot import.
var need = gpu.DriverNeed{
	CUDA: gpu.CUDANeed{Image: "the CUDA worker image", Version: "12.8", MinDriver: "525.60.13", FullDriver: "570.26"},
	ROCm: gpu.ROCmNeed{Image: "the ROCm worker image", Version: "7.0.1", MinRelease: "6.2", MinModule: "6.8.5",
		Install: "sudo amdgpu-install -y --usecase=dkms"},
}

func a100s(n int) gpu.Report {
	r := gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{}, NVIDIADriver: "570.133.20", CUDADriver: "12.8"}
	for i := 0; i < n; i++ {
		r.GPUs = append(r.GPUs, gpu.GPU{Vendor: gpu.NVIDIA, Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA A100-PCIE-40GB", Source: "nvml"})
	}
	return r
}

func mi100s(n int) gpu.Report {
	r := gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{}, AMDGPUDriver: "6.12.12"}
	for i := 0; i < n; i++ {
		r.GPUs = append(r.GPUs, gpu.GPU{Vendor: gpu.AMD, Index: i, Name: "AMD Instinct MI100",
			RenderNode: fmt.Sprintf("/dev/dri/renderD%d", 128+i), Source: "kfd"})
	}
	return r
}

// healthy is a host where everything passes; tests break one thing each.
type healthy struct {
	eng      *fake.Engine
	connErr  error
	report   gpu.Report
	gpuErr   error
	ip, src  string
	ipErr    error
	busy     map[int]error
	free     uint64
	freeErr  error
	access   map[string]error
	accessed []string
	render   int
}

func newHealthy() *healthy {
	e := fake.New()
	e.InfoValue.ServerVersion = "27.3.1"
	e.InfoValue.APIVersion = "1.47"
	e.InfoValue.Runtimes = []string{"nvidia", "runc"}
	return &healthy{eng: e, report: a100s(2), ip: "129.114.27.3", src: host.SourceMetadata,
		busy: map[int]error{}, free: 500 << 30, access: map[string]error{}, render: 109}
}

func (h *healthy) deps() Deps {
	return Deps{
		Connect: func(context.Context) (docker.Engine, error) {
			if h.connErr != nil {
				return nil, h.connErr
			}
			return h.eng, nil
		},
		DetectGPUs: func(context.Context) (gpu.Report, error) { return h.report, h.gpuErr },
		HostIP:     func(context.Context) (string, string, error) { return h.ip, h.src, h.ipErr },
		PortFree:   func(p int) error { return h.busy[p] },
		DiskFree:   func(string) (uint64, error) { return h.free, h.freeErr },
		Access: func(p string) error {
			h.accessed = append(h.accessed, p)
			return h.access[p]
		},
		Groups: func() (int, int) { return h.render, 44 },
	}
}

func (h *healthy) run() Result {
	return Run(context.Background(), h.deps(), Options{Project: "mltrain", Driver: need})
}

func row(t *testing.T, r Result, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q row in %+v", name, r.Checks)
	return Check{}
}

func names(r Result) []string {
	var out []string
	for _, c := range r.Checks {
		out = append(out, c.Name)
	}
	return out
}

func TestAllPass(t *testing.T) {
	r := newHealthy().run()
	assert.True(t, r.OK)
	assert.Equal(t, []string{"docker", "gpus", "nvidia driver", "nvidia runtime", "port 8265", "port 3000", "port 8888", "port 9001", "disk", "address"}, names(r))
	for _, c := range r.Checks {
		assert.Equal(t, Pass, c.Status, c.Name)
		assert.Empty(t, c.Fix, c.Name)
	}
	assert.Equal(t, "Docker 27.3.1 (API 1.47) at fake://engine", row(t, r, "docker").Detail)
	assert.Equal(t, "2 nvidia GPUs: 2x NVIDIA A100-PCIE-40GB", row(t, r, "gpus").Detail)
	assert.Equal(t, "NVIDIA driver 570.133.20 (CUDA 12.8); the CUDA worker image carries CUDA 12.8: NVIDIA driver 570.26 or newer", row(t, r, "nvidia driver").Detail)
	assert.Contains(t, row(t, r, "address").Detail, "129.114.27.3")
	assert.Contains(t, row(t, r, "disk").Detail, "500.0 GiB free in Docker's root /var/lib/docker")
}

func TestEngineUnreachable(t *testing.T) {
	h := newHealthy()
	h.connErr = &docker.UnreachableError{Host: "unix:///var/run/docker.sock", Err: errors.New("connect: no such file or directory")}
	r := h.run()
	assert.False(t, r.OK)
	d := row(t, r, "docker")
	assert.Equal(t, Fail, d.Status)
	assert.Contains(t, d.Detail, "unix:///var/run/docker.sock")
	assert.Equal(t, FixDockerStart, d.Fix)
	assert.Equal(t, Warn, row(t, r, "nvidia runtime").Status)
	assert.Equal(t, Warn, row(t, r, "disk").Status)
	assert.Equal(t, Pass, row(t, r, "port 8265").Status, "ports are still probed")
}

func TestEnginePermissionDeniedAndHint(t *testing.T) {
	h := newHealthy()
	h.connErr = fmt.Errorf("dial unix /var/run/docker.sock: connect: %w", syscall.EACCES)
	assert.Equal(t, FixDockerGroup, row(t, h.run(), "docker").Fix)

	h.connErr = clierr.WithHint(errors.New("context \"remote\" not found"), "docker context use default")
	assert.Equal(t, "docker context use default", row(t, h.run(), "docker").Fix)

	h.connErr = nil
	h.eng.InfoErr = errors.New("500 internal")
	r := h.run()
	assert.Equal(t, Fail, row(t, r, "docker").Status)
	assert.Contains(t, row(t, r, "docker").Detail, "500 internal")
}

func TestNVIDIARuntimeMissing(t *testing.T) {
	h := newHealthy()
	h.eng.InfoValue.Runtimes = []string{"io.containerd.runc.v2", "runc"}
	r := h.run()
	assert.False(t, r.OK)
	c := row(t, r, "nvidia runtime")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "runtimes: io.containerd.runc.v2, runc")
	assert.Equal(t, FixNVIDIARuntime, c.Fix)
	assert.Contains(t, c.Fix, "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker")

	// CDI devices are as good as the runtime.
	h.eng.InfoValue.CDIDevices = []string{"nvidia.com/gpu=1", "nvidia.com/gpu=0", "vendor.com/x=1"}
	c = row(t, h.run(), "nvidia runtime")
	assert.Equal(t, Pass, c.Status)
	assert.Contains(t, c.Detail, "nvidia.com/gpu=0, nvidia.com/gpu=1")
}

func TestNVIDIADriverProblemsAreRowsAndRuntimeStillChecked(t *testing.T) {
	h := newHealthy()
	h.eng.InfoValue.Runtimes = []string{"runc"}
	h.report = gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{{Code: gpu.CodeLibraryMissing, Vendor: gpu.NVIDIA,
		Message: "the nvidia driver is loaded for 0000:17:00.0 but libnvidia-ml.so.1 (NVML) was not found", Fix: "install nvidia-utils"}}}
	r := h.run()
	assert.Equal(t, []string{"docker", "gpus", "gpu library-missing", "nvidia runtime"}, names(r)[:4])
	assert.Equal(t, Fail, row(t, r, "gpus").Status)
	p := row(t, r, "gpu library-missing")
	assert.Equal(t, Fail, p.Status)
	assert.Equal(t, "install nvidia-utils", p.Fix)
	assert.Equal(t, Fail, row(t, r, "nvidia runtime").Status)
}

func TestAMDDevices(t *testing.T) {
	h := newHealthy()
	h.report = mi100s(2)
	r := h.run()
	assert.True(t, r.OK)
	assert.Equal(t, []string{"/dev/kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"}, h.accessed)
	assert.NotContains(t, names(r), "nvidia runtime")
	assert.Equal(t, "render gid 109, video gid 44: AMD containers get them with group_add", row(t, r, "render group").Detail)

	h.render = 0
	c0 := row(t, h.run(), "render group")
	assert.Equal(t, Warn, c0.Status)
	assert.Contains(t, c0.Fix, "getent group render")

	h.accessed = nil
	h.access["/dev/dri/renderD129"] = &fs.PathError{Op: "access", Path: "/dev/dri/renderD129", Err: syscall.EACCES}
	r = h.run()
	assert.False(t, r.OK)
	c := row(t, r, "/dev/dri/renderD129")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "permission denied on /dev/dri/renderD129")
	assert.Equal(t, FixAMDGroups, c.Fix)
	assert.Contains(t, c.Fix, "usermod -aG video,render")
	assert.Equal(t, Pass, row(t, r, "/dev/dri/renderD128").Status)

	h.access["/dev/kfd"] = syscall.ENOENT
	c = row(t, h.run(), "/dev/kfd")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Fix, "modprobe amdgpu")

	h.access["/dev/kfd"] = syscall.EIO
	c = row(t, h.run(), "/dev/kfd")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "input/output error")
}

// The driver row: a too-old driver fails with the upgrade as its fix, one
// that runs through minor-version compatibility or is unknown is a warning.
func TestDriverRows(t *testing.T) {
	h := newHealthy()
	h.report.NVIDIADriver, h.report.CUDADriver = "515.65.01", "11.7"
	r := h.run()
	assert.False(t, r.OK)
	c := row(t, r, "nvidia driver")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "NVIDIA driver 515.65.01 (CUDA 11.7) is too old")
	assert.Contains(t, c.Detail, "needs NVIDIA driver 525.60.13 or newer")
	assert.Contains(t, c.Fix, "upgrade the NVIDIA driver to 570.26 or newer")
	assert.Contains(t, c.Fix, "mltrain up --image-worker IMAGE")

	h.report.NVIDIADriver, h.report.CUDADriver = "550.54.15", "12.4"
	r = h.run()
	assert.True(t, r.OK, "minor-version compatibility runs the lab")
	assert.Equal(t, Warn, row(t, r, "nvidia driver").Status)

	h.report.NVIDIADriver, h.report.CUDADriver = "", ""
	r = h.run()
	assert.True(t, r.OK, "an unknown driver is unchecked, not failed")
	c = row(t, r, "nvidia driver")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "not checked")

	// Without a need nothing passes silently.
	h.report = a100s(2)
	c = row(t, Run(context.Background(), h.deps(), Options{}), "nvidia driver")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "no valid CUDA requirement")

	h.report = mi100s(2)
	r = h.run()
	assert.Equal(t, []string{"docker", "gpus", "amdgpu driver", "render group"}, names(r)[:4])
	assert.Equal(t, Pass, row(t, r, "amdgpu driver").Status)
	h.report.AMDGPUDriver = "6.7.0"
	r = h.run()
	assert.False(t, r.OK)
	c = row(t, r, "amdgpu driver")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Fix, "sudo amdgpu-install -y --usecase=dkms")

	// No GPU (CPU rehearsal), no driver row.
	h.report = gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{{Code: gpu.CodeNoGPU, Message: "none", Fix: "lease"}}}
	assert.NotContains(t, names(h.run()), "nvidia driver")
}

func TestGPUCount(t *testing.T) {
	h := newHealthy()
	h.report = a100s(1)
	r := h.run()
	assert.True(t, r.OK, "one GPU is a warning, not a failure")
	c := row(t, r, "gpus")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Fix, "mltrain up --share-gpu")

	h.report = gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{{Code: gpu.CodeNoGPU, Message: "none", Fix: "lease"}}}
	r = h.run()
	assert.True(t, r.OK)
	c = row(t, r, "gpus")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "CPU-only rehearsal")
	assert.NotContains(t, names(r), "gpu no-gpu")
	assert.NotContains(t, names(r), "nvidia runtime")

	h.report = gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{{Code: gpu.CodeDriverMissing, Vendor: gpu.AMD, Message: "AMD GPU hardware without the amdgpu kernel driver", Fix: "amdgpu-install"}}}
	r = h.run()
	assert.False(t, r.OK)
	assert.Equal(t, Fail, row(t, r, "gpus").Status)
	assert.Equal(t, "amdgpu-install", row(t, r, "gpu driver-missing").Fix)

	h.report = a100s(2)
	h.report.GPUs[0].MIG = true
	h.report.Problems = []gpu.Problem{{Code: gpu.CodeMIGEnabled, Vendor: gpu.NVIDIA, Message: "MIG on", Fix: "nvidia-smi -mig 0"}}
	r = h.run()
	assert.True(t, r.OK)
	assert.Equal(t, Warn, row(t, r, "gpu mig-enabled").Status)

	h.gpuErr = clierr.WithHint(errors.New("MLTRAIN_SYSFS_ROOT=/x: no such file or directory"), "unset MLTRAIN_SYSFS_ROOT")
	r = h.run()
	c = row(t, r, "gpus")
	assert.Equal(t, Fail, c.Status)
	assert.Equal(t, "unset MLTRAIN_SYSFS_ROOT", c.Fix)
}

func TestPorts(t *testing.T) {
	h := newHealthy()
	h.eng.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: "old-jupyter", Image: "jupyter/base", State: "running",
		Ports: []docker.Port{{HostPort: 8888, ContainerPort: 8888, Proto: "tcp"}}}})
	h.eng.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: "mltrain-ray-head-1", Image: "ray", State: "running",
		Labels: map[string]string{"com.docker.compose.project": "mltrain"},
		Ports:  []docker.Port{{HostPort: 8265, ContainerPort: 8265, Proto: "tcp"}}}})
	h.busy[8888] = errors.New("address already in use") // docker-proxy holds it too
	h.busy[8265] = errors.New("address already in use")
	h.busy[9001] = errors.New("listen tcp :9001: bind: address already in use")
	r := h.run()
	assert.False(t, r.OK)

	c := row(t, r, "port 8888")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "container old-jupyter")
	assert.Contains(t, c.Fix, "docker stop old-jupyter")

	c = row(t, r, "port 8265")
	assert.Equal(t, Pass, c.Status, "this lab's own container may hold its port")
	assert.Contains(t, c.Detail, "mltrain-ray-head-1")

	c = row(t, r, "port 9001")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "another process")
	assert.Contains(t, c.Fix, "ss -ltnp sport = :9001")

	assert.Equal(t, Pass, row(t, r, "port 3000").Status)

	// Another lab's container is somebody else's.
	r = Run(context.Background(), h.deps(), Options{Project: "other"})
	assert.Equal(t, Fail, row(t, r, "port 8265").Status)
}

func TestDisk(t *testing.T) {
	h := newHealthy()
	h.free = 59 << 30
	r := h.run()
	assert.True(t, r.OK, "low disk is a warning")
	c := row(t, r, "disk")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "59.0 GiB free")
	assert.Contains(t, c.Detail, "60.0 GiB")
	assert.Contains(t, c.Fix, "docker system prune")

	h.freeErr = errors.New("statfs /var/lib/docker: no such file or directory")
	c = row(t, h.run(), "disk")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "cannot measure")
}

func TestAddress(t *testing.T) {
	h := newHealthy()
	h.ip, h.src = "127.0.0.1", host.SourceLoopback
	c := row(t, h.run(), "address")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Fix, "--host-ip")

	h.ip, h.src = "10.0.0.5", host.SourceDefaultRoute
	c = row(t, h.run(), "address")
	assert.Equal(t, Pass, c.Status)
	assert.Contains(t, c.Detail, "default-route")

	h.ipErr = clierr.Hintf("pass --host-ip 192.0.2.10", "--host-ip %q is not an IP address", "x")
	r := h.run()
	assert.False(t, r.OK)
	c = row(t, r, "address")
	assert.Equal(t, Fail, c.Status)
	assert.Equal(t, "pass --host-ip 192.0.2.10", c.Fix)
}
