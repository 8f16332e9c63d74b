package plan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/service"
)

var creds = Credentials{MinIOAccessKey: "a", MinIOSecretKey: "b", MinIOLabAccessKey: "la", MinIOLabSecretKey: "lb",
	GrafanaAdminPassword: "c", JupyterToken: "d", RayAuthToken: "e"}

func nv(n int) []gpu.GPU {
	var out []gpu.GPU
	for i := 0; i < n; i++ {
		out = append(out, gpu.GPU{Vendor: gpu.NVIDIA, Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "A100", PCIBusID: fmt.Sprintf("0000:%02x:00.0", i+1)})
	}
	return out
}

func amd(n int) []gpu.GPU {
	var out []gpu.GPU
	for i := 0; i < n; i++ {
		out = append(out, gpu.GPU{Vendor: gpu.AMD, Index: i, UUID: fmt.Sprintf("%x", 100+i), Name: "MI100",
			PCIBusID: fmt.Sprintf("0000:%02x:00.0", i+1), RenderNode: fmt.Sprintf("/dev/dri/renderD%d", 128+i)})
	}
	return out
}

func facts(gpus []gpu.GPU) host.Facts {
	return host.Facts{GPUs: gpu.Report{GPUs: gpus}, CPUs: 64, MemoryBytes: 256 << 30, HostIP: "10.1.2.3", RenderGID: 110, VideoGID: 44}
}

func TestStandardModeOneWorkerPerGPU(t *testing.T) {
	p, err := New(facts(nv(2)), Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, ModeStandard, p.Mode)
	assert.Equal(t, AccelCUDA, p.Accelerator)
	require.Len(t, p.Workers, 2)
	for i, w := range p.Workers {
		assert.Equal(t, i, w.Index)
		assert.Equal(t, fmt.Sprintf("ray-worker-%d", i), w.Service)
		assert.Equal(t, w.Service, w.Container)
		assert.Equal(t, fmt.Sprintf("GPU-%d", i), w.GPU.UUID)
		assert.False(t, w.SharedGPU)
		assert.Equal(t, 30, w.CPUs, "(64 - 4 reserved) / 2")
		assert.Equal(t, int64(16<<30), w.ShmBytes, "30%% of 256g / 2 = 38.4g, capped at 16g")
	}
	assert.Equal(t, 4, p.Head.CPUs)
	assert.Empty(t, p.Warnings)
	cuda, _ := dockerfiles.Ref(dockerfiles.RayCUDA, DefaultRayVersion)
	assert.Equal(t, cuda, p.Images[service.RoleWorker])
	assert.Equal(t, cuda, p.Images[service.RoleHead], "the head runs the workers' image: drivers need torch")
	for _, r := range service.Roles() {
		assert.NotEmpty(t, p.Images[r], r)
		assert.NotContains(t, p.Images[r], ":latest", r)
		assert.Equal(t, "CMD", p.Healthchecks[r][0], r)
	}
}

func TestWorkersFewerThanGPUsTakesTheFirst(t *testing.T) {
	gpus := nv(4)
	gpus[0], gpus[3] = gpus[3], gpus[0] // order in the report must not matter
	p, err := New(facts(gpus), Options{Workers: 2}, creds)
	require.NoError(t, err)
	require.Len(t, p.Workers, 2)
	assert.Equal(t, "GPU-0", p.Workers[0].GPU.UUID)
	assert.Equal(t, "GPU-1", p.Workers[1].GPU.UUID)
	assert.Equal(t, 30, p.Workers[0].CPUs)
}

func TestAMDUsesROCmImageAndRenderNodes(t *testing.T) {
	p, err := New(facts(amd(2)), Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, AccelROCm, p.Accelerator)
	rocm, _ := dockerfiles.Ref(dockerfiles.RayROCm, DefaultRayVersion)
	assert.Equal(t, rocm, p.Images[service.RoleWorker])
	assert.Equal(t, "/dev/dri/renderD129", p.Workers[1].GPU.RenderNode)
	assert.Equal(t, 110, p.RenderGID)
}

func TestSharedMode(t *testing.T) {
	p, err := New(facts(nv(1)), Options{ShareGPU: true}, creds)
	require.NoError(t, err)
	assert.Equal(t, ModeShared, p.Mode)
	require.Len(t, p.Workers, 2)
	for _, w := range p.Workers {
		assert.Equal(t, "GPU-0", w.GPU.UUID)
		assert.True(t, w.SharedGPU)
	}
	assert.NotEmpty(t, p.Warnings)
}

func TestOneGPUWithoutShareIsOneWorkerWithAdvice(t *testing.T) {
	p, err := New(facts(nv(1)), Options{}, creds)
	require.NoError(t, err)
	assert.Len(t, p.Workers, 1)
	assert.Contains(t, strings.Join(p.Warnings, "\n"), "--share-gpu")
}

func TestCPURehearsal(t *testing.T) {
	f := host.Facts{GPUs: gpu.Report{Problems: []gpu.Problem{{Code: gpu.CodeNoGPU}}}, CPUs: 2, MemoryBytes: 4 << 30}
	p, err := New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, ModeCPU, p.Mode)
	assert.Equal(t, AccelCPU, p.Accelerator)
	require.Len(t, p.Workers, 2)
	for _, w := range p.Workers {
		assert.Nil(t, w.GPU)
		assert.Equal(t, 1, w.CPUs)
	}
	require.NotEmpty(t, p.Warnings)
	assert.Equal(t, CPUWarning, p.Warnings[0], "the rehearsal warning comes first")
	assert.Equal(t, "localhost", p.HostIP)
	cuda, _ := dockerfiles.Ref(dockerfiles.RayCUDA, DefaultRayVersion)
	assert.Equal(t, cuda, p.Images[service.RoleWorker])

	p, err = New(f, Options{Workers: 3}, creds)
	require.NoError(t, err)
	assert.Len(t, p.Workers, 3)
}

func TestHardwareWithoutDriverIsAnErrorNotACPULab(t *testing.T) {
	f := host.Facts{GPUs: gpu.Report{Problems: []gpu.Problem{{Code: gpu.CodeDriverMissing,
		Message: "2 NVIDIA GPUs on the PCI bus but no driver bound", Fix: "sudo apt install nvidia-driver-550"}}}, CPUs: 64, MemoryBytes: 64 << 30}
	_, err := New(f, Options{}, creds)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no driver bound")
	assert.Contains(t, err.Error(), "not fall back to a CPU lab")
	assert.Contains(t, clierr.HintWith(err, clierr.Plain), "nvidia-driver-550")
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		facts   host.Facts
		opts    Options
		err     string // in the message
		hint    string // in the hint
		mutate  func(*host.Facts)
		badCred bool
	}{
		{name: "workers above GPUs", facts: facts(nv(2)), opts: Options{Workers: 3}, err: "--workers 3", hint: "--workers 2"},
		{name: "workers above one GPU", facts: facts(nv(1)), opts: Options{Workers: 2}, err: "--workers 2", hint: "--share-gpu"},
		{name: "share with two GPUs", facts: facts(nv(2)), opts: Options{ShareGPU: true}, err: "--share-gpu", hint: "drop --share-gpu"},
		{name: "share without GPU", facts: host.Facts{CPUs: 4, MemoryBytes: 8 << 30}, opts: Options{ShareGPU: true}, err: "--share-gpu", hint: "drop --share-gpu"},
		{name: "share with workers 3", facts: facts(nv(1)), opts: Options{ShareGPU: true, Workers: 3}, err: "--workers 3", hint: "drop --workers"},
		{name: "bad bind", facts: facts(nv(2)), opts: Options{Bind: "all"}, err: `--bind "all"`, hint: "0.0.0.0"},
		{name: "bind with port", facts: facts(nv(2)), opts: Options{Bind: "0.0.0.0:80"}, err: "--bind", hint: "127.0.0.1"},
		{name: "port clash", facts: facts(nv(2)), opts: Options{Ports: map[string]int{service.PortJupyter: 3000}}, err: "host port 3000", hint: "--port"},
		{name: "unknown port name", facts: facts(nv(2)), opts: Options{Ports: map[string]int{"ssh": 22}}, err: "ssh", hint: "dashboard"},
		{name: "port out of range", facts: facts(nv(2)), opts: Options{Ports: map[string]int{service.PortGrafana: 70000}}, err: "70000", hint: "between 1 and 65535"},
		{name: "old ray", facts: facts(nv(2)), opts: Options{RayVersion: "2.40.0"}, err: "token authentication", hint: "2.52.0"},
		{name: "garbage ray", facts: facts(nv(2)), opts: Options{RayVersion: "latest"}, err: "--ray-version", hint: DefaultRayVersion},
		{name: "latest image", facts: facts(nv(2)), opts: Options{Images: map[service.Role]string{service.RoleMinIO: "minio/minio:latest"}}, err: "--image-minio", hint: "pin"},
		{name: "untagged image", facts: facts(nv(2)), opts: Options{Images: map[service.Role]string{service.RoleGrafana: "grafana/grafana"}}, err: "no tag", hint: "--image-grafana"},
		{name: "unknown role", facts: facts(nv(2)), opts: Options{Images: map[service.Role]string{"db": "x:1"}}, err: "db", hint: "head"},
		{name: "shell healthcheck", facts: facts(nv(2)), opts: Options{Healthchecks: map[service.Role][]string{service.RoleHead: {"CMD-SHELL", "true"}}}, err: "exec-form", hint: "CMD"},
		{name: "bad project", facts: facts(nv(2)), opts: Options{Project: "My Lab"}, err: "--project", hint: "lowercase"},
		{name: "negative workers", facts: facts(nv(2)), opts: Options{Workers: -1}, err: "--workers -1", hint: "--workers 1"},
		{name: "bad host ip", facts: host.Facts{GPUs: gpu.Report{GPUs: nv(2)}, CPUs: 8, MemoryBytes: 8 << 30, HostIP: "http://x"}, err: "--host-ip", hint: "--host-ip"},
		{name: "no cpus", facts: host.Facts{GPUs: gpu.Report{GPUs: nv(2)}, MemoryBytes: 8 << 30}, err: "CPU count", hint: "--cpus"},
		{name: "no memory", facts: host.Facts{GPUs: gpu.Report{GPUs: nv(2)}, CPUs: 8}, err: "memory", hint: "--memory"},
		{name: "shm above memory", facts: facts(nv(2)), opts: Options{WorkerShm: 200 << 30}, err: "--shm-size", hint: "smaller"},
		{name: "unknown vendor", facts: facts([]gpu.GPU{{Vendor: "intel", UUID: "x"}}), err: `unknown GPU vendor "intel"`, hint: "nvidia"},
		{name: "mixed vendors", facts: facts(append(nv(1), amd(2)[1])), err: "mixed GPU vendors", hint: "one vendor"},
		{name: "nvidia without uuid", facts: facts([]gpu.GPU{{Vendor: gpu.NVIDIA}}), err: "without a UUID", hint: "mltrain gpus --json"},
		{name: "amd bad render node", facts: facts([]gpu.GPU{{Vendor: gpu.AMD, RenderNode: "/dev/sda"}}), err: "/dev/sda", hint: "mltrain gpus --json"},
		{name: "same gpu twice", facts: facts(append(nv(2), nv(1)...)), err: "same device", hint: "mltrain gpus --json"},
		{name: "all MIG", facts: facts([]gpu.GPU{{Vendor: gpu.NVIDIA, UUID: "GPU-1", MIG: true}}), err: "MIG", hint: "-mig 0"},
		{name: "missing credentials", facts: facts(nv(2)), badCred: true, err: "credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := creds
			if tc.badCred {
				c.RayAuthToken = ""
			}
			_, err := New(tc.facts, tc.opts, c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			if tc.hint != "" {
				assert.Contains(t, clierr.Hint(err), tc.hint)
			}
		})
	}
}

func TestOverrides(t *testing.T) {
	opts := Options{
		Project: "lab2", RayVersion: "2.55.1", Bind: "10.0.0.9", HeadCPUs: 2, WorkerCPUs: 8, WorkerShm: 4 << 30,
		DataVolume: "food11-copy", Images: map[service.Role]string{service.RoleMinIO: "local/minio-standin:test"},
		Healthchecks: map[service.Role][]string{service.RoleMinIO: {"CMD", "/standin", "health"}},
		Ports:        map[string]int{service.PortDashboard: 18265},
	}
	p, err := New(facts(nv(2)), opts, creds)
	require.NoError(t, err)
	assert.Equal(t, "lab2-ray-worker-0", p.Workers[0].Container)
	assert.Equal(t, "lab2-ray-head", p.Head.Container)
	assert.Equal(t, 2, p.Head.CPUs)
	assert.Equal(t, 8, p.Workers[1].CPUs)
	assert.Equal(t, int64(4<<30), p.Workers[1].ShmBytes)
	assert.Equal(t, "local/minio-standin:test", p.Images[service.RoleMinIO])
	assert.Equal(t, []string{"CMD", "/standin", "health"}, p.Healthchecks[service.RoleMinIO])
	assert.Equal(t, service.DefaultHealthcheck(service.RoleHead), p.Healthchecks[service.RoleHead])
	assert.Equal(t, p.Images[service.RoleWorker], p.Images[service.RoleHead])
	assert.Equal(t, 18265, p.Ports[service.PortDashboard])
	assert.Equal(t, 3000, p.Ports[service.PortGrafana])
	assert.Equal(t, "food11-copy", p.DataVolume)
	assert.Equal(t, "10.1.2.3", p.HostIP)

	f := facts(nv(2))
	f.HostIP = ""
	p, err = New(f, opts, creds)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.9", p.HostIP, "a specific --bind is the browser address when none is known")
}

func TestSizingSmallHost(t *testing.T) {
	f := host.Facts{GPUs: gpu.Report{GPUs: nv(2)}, CPUs: 8, MemoryBytes: 16 << 30}
	p, err := New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Head.CPUs)
	assert.Equal(t, 3, p.Workers[0].CPUs, "(8 - 2) / 2")
	// 30% of 16g / 2 workers, rounded down to MiB.
	assert.Equal(t, (int64(16<<30)*30/100/2)/(1<<20)*(1<<20), p.Workers[0].ShmBytes)
	assert.Zero(t, p.Workers[0].ShmBytes%(1<<20))
	assert.Equal(t, int64(819<<20), p.Head.ShmBytes, "5% of 16g")
}

func TestPlanIsPure(t *testing.T) {
	f := facts(nv(2))
	a, err := New(f, Options{}, creds)
	require.NoError(t, err)
	b, err := New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	a.Workers[0].GPU.UUID = "changed"
	assert.Equal(t, "GPU-0", f.GPUs.GPUs[0].UUID, "the plan does not alias the caller's facts")
}

// Property: over random GPU lists and options, a plan never gives one GPU
// to two workers except in share mode, every worker outside CPU rehearsal
// has a GPU, and invalid combinations are refused rather than planned.
func TestPropertyNoGPUGivenTwice(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 2026))
	plans := 0
	for iter := 0; iter < 5000; iter++ {
		n := rng.IntN(9)
		var gpus []gpu.GPU
		if rng.IntN(2) == 0 {
			gpus = nv(n)
		} else {
			gpus = amd(n)
		}
		rng.Shuffle(len(gpus), func(i, j int) { gpus[i], gpus[j] = gpus[j], gpus[i] })
		opts := Options{Workers: rng.IntN(n + 3), ShareGPU: rng.IntN(4) == 0}
		p, err := New(facts(gpus), opts, creds)

		switch {
		case opts.ShareGPU && n != 1:
			require.Error(t, err, "share-gpu with %d GPUs", n)
			continue
		case opts.ShareGPU && opts.Workers != 0 && opts.Workers != 2:
			require.Error(t, err)
			continue
		case n > 0 && !opts.ShareGPU && opts.Workers > n:
			require.Error(t, err, "--workers %d > %d GPUs", opts.Workers, n)
			continue
		}
		require.NoError(t, err, "n=%d opts=%+v", n, opts)
		plans++

		wantWorkers := opts.Workers
		switch {
		case n == 0 && wantWorkers == 0:
			wantWorkers = 2
		case opts.ShareGPU:
			wantWorkers = 2
		case wantWorkers == 0:
			wantWorkers = n
		}
		require.Len(t, p.Workers, wantWorkers)

		owner := map[string]int{}
		for _, w := range p.Workers {
			if n == 0 {
				require.Nil(t, w.GPU)
				require.Equal(t, ModeCPU, p.Mode)
				continue
			}
			require.NotNil(t, w.GPU, "worker %d without GPU on a GPU host", w.Index)
			for _, key := range []string{"uuid:" + w.GPU.UUID, "pci:" + w.GPU.PCIBusID, "render:" + w.GPU.RenderNode} {
				if key == "render:" {
					continue
				}
				if prev, taken := owner[key]; taken && p.Mode != ModeShared {
					t.Fatalf("GPU %s given to workers %d and %d (mode %s, opts %+v)", key, prev, w.Index, p.Mode, opts)
				}
				owner[key] = w.Index
			}
		}
	}
	assert.Greater(t, plans, 1000, "the property must be exercised on many valid plans")
}

// ROCm workers run as user ray: without the render nodes' group they see no
// GPU, so a plan that cannot add it is refused, naming the flag that fixes it.
func TestAMDWithoutRenderGroupIsRefused(t *testing.T) {
	f := facts(amd(2))
	f.RenderGID = 0
	_, err := New(f, Options{}, creds)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "render group id is unknown")
	assert.Contains(t, err.Error(), "/dev/dri/renderD128")
	assert.Contains(t, clierr.HintWith(err, clierr.Plain), "mltrain render --render-gid GID")
	assert.Contains(t, clierr.HintWith(err, onLab("lab2")), "mltrain --project lab2 render --render-gid GID", "the next step acts on the user's lab")
	f.RenderGID = 109
	p, err := New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, 109, p.RenderGID)
}

func TestDriverTooOldForTheWorkerImage(t *testing.T) {
	f := facts(nv(2))
	f.GPUs.NVIDIADriver, f.GPUs.CUDADriver = "515.105.01", "11.7"
	_, err := New(f, Options{}, creds)
	require.Error(t, err, "CUDA 12 wheels cannot run on a CUDA 11 driver")
	assert.Contains(t, err.Error(), "515.105.01")
	assert.Contains(t, clierr.HintWith(err, onLab("lab2")), "'mltrain --project lab2 up --image-worker IMAGE'", "the fix acts on the user's lab")

	_, err = New(f, Options{Images: map[service.Role]string{service.RoleWorker: "site/ray-cu118:2.54.0"}}, creds)
	assert.NoError(t, err, "a replaced worker image brings its own CUDA")

	f.GPUs.NVIDIADriver, f.GPUs.CUDADriver = "550.54.15", "12.4"
	p, err := New(f, Options{}, creds)
	require.NoError(t, err, "minor-version compatibility runs the prebuilt kernels")
	assert.True(t, strings.Contains(strings.Join(p.Warnings, "\n"), "550.54.15"), "but it is said: %v", p.Warnings)

	f.GPUs.NVIDIADriver, f.GPUs.CUDADriver = "570.133.20", "12.8"
	p, err = New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Empty(t, p.Warnings)
}

func TestAllowJoinPutsRayOnTheHostNetworkWithPinnedPorts(t *testing.T) {
	f := facts(nv(2))
	p, err := New(f, Options{}, creds)
	require.NoError(t, err)
	assert.Equal(t, NetworkBridge, p.Network, "a lab is closed unless asked")
	assert.Nil(t, p.Head.Ports)

	f.NodeIP = "10.52.0.7"
	p, err = New(f, Options{AllowJoin: true}, creds)
	require.NoError(t, err)
	assert.Equal(t, NetworkHost, p.Network)
	assert.Equal(t, "10.52.0.7", p.NodeIP)
	require.NotNil(t, p.Head.Ports)
	assert.Equal(t, NodePorts(DefaultRayPortBase, 0), *p.Head.Ports)
	for i, w := range p.Workers {
		require.NotNil(t, w.Ports)
		assert.Equal(t, NodePorts(DefaultRayPortBase, i+1), *w.Ports, "worker %d has its own slot", i)
	}

	f.NodeIP = ""
	_, err = New(f, Options{AllowJoin: true}, creds)
	require.Error(t, err)
	assert.Contains(t, clierr.Hint(err), "--node-ip")

	f.NodeIP = "10.52.0.7"
	_, err = New(f, Options{AllowJoin: true, RayPortBase: 31000}, creds)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "32768")
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
}

// onLab writes command lines for the lab named project, as the command layer does.
func onLab(project string) func(words ...string) string {
	return func(words ...string) string { return clierr.Plain(append([]string{"--project", project}, words...)...) }
}
