package render

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixedCreds keeps goldens stable; real labs get random ones.
var fixedCreds = plan.Credentials{
	MinIOAccessKey:       "TESTACCESSKEY0000000",
	MinIOSecretKey:       "TESTSECRETKEY000000000000000000000000000",
	MinIOLabAccessKey:    "TESTLABKEY0000000000",
	MinIOLabSecretKey:    "TESTLABSECRET000000000000000000000000000",
	GrafanaAdminPassword: "TESTGRAFANAPASSWORD0000000",
	JupyterToken:         "0123456789abcdef0123456789abcdef0123456789abcdef",
	RayAuthToken:         "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
}

func nvidiaGPUs(n int) []gpu.GPU {
	var out []gpu.GPU
	for i := 0; i < n; i++ {
		out = append(out, gpu.GPU{Vendor: gpu.NVIDIA, Index: i, UUID: fmt.Sprintf("GPU-%08x-aaaa-bbbb-cccc-%012d", i+1, i),
			Name: "NVIDIA A100-PCIE-40GB", MemoryMiB: 40960, PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x17+i*0x48), Source: "nvml"})
	}
	return out
}

func amdGPUs(n int) []gpu.GPU {
	var out []gpu.GPU
	for i := 0; i < n; i++ {
		out = append(out, gpu.GPU{Vendor: gpu.AMD, Index: i, UUID: fmt.Sprintf("%016x", 0x5a1b2c3d0000+i), Name: "AMD Instinct MI100",
			MemoryMiB: 32768, PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x23+i*0x20), RenderNode: fmt.Sprintf("/dev/dri/renderD%d", 128+i),
			KFDGPUID: uint64(1000 + i), Source: "kfd"})
	}
	return out
}

type goldenCase struct {
	name  string
	facts host.Facts
	opts  plan.Options
	join  *plan.JoinBundle // a second host's plan for this lab
}

// plan is the case's plan: the lab's, or the second host's when it joins.
func (c goldenCase) plan() (plan.Plan, error) {
	if c.join != nil {
		return plan.NewJoin(c.facts, plan.JoinOptions{}, *c.join)
	}
	return plan.New(c.facts, c.opts, fixedCreds)
}

// services is how many services the case's project has.
func (c goldenCase) services(p plan.Plan) int {
	if c.join != nil {
		return len(p.Workers)
	}
	return 5 + len(p.Workers)
}

func goldenCases() []goldenCase {
	big := func(gpus []gpu.GPU) host.Facts {
		return host.Facts{GPUs: gpu.Report{GPUs: gpus}, CPUs: 128, MemoryBytes: 512 << 30, HostIP: "129.114.27.10"}
	}
	amd := big(amdGPUs(2))
	amd.RenderGID, amd.VideoGID = 110, 44
	joinable := big(nvidiaGPUs(2))
	joinable.NodeIP = "10.52.0.7"
	joiner := host.Facts{GPUs: gpu.Report{GPUs: nvidiaGPUs(1)}, CPUs: 32, MemoryBytes: 128 << 30, HostIP: "129.114.27.11", NodeIP: "10.52.0.8"}
	bundle := goldenBundle()
	return []goldenCase{
		{"nvidia-2gpu", big(nvidiaGPUs(2)), plan.Options{}, nil},
		{"amd-2gpu", amd, plan.Options{}, nil},
		{"nvidia-1gpu-shared", host.Facts{GPUs: gpu.Report{GPUs: nvidiaGPUs(1)}, CPUs: 32, MemoryBytes: 128 << 30, HostIP: "10.0.0.5"}, plan.Options{ShareGPU: true}, nil},
		{"cpu-rehearsal", host.Facts{GPUs: gpu.Report{Problems: []gpu.Problem{{Code: gpu.CodeNoGPU, Message: "no GPU"}}}, CPUs: 2, MemoryBytes: 8 << 30},
			plan.Options{Project: "rehearsal", Bind: "127.0.0.1"}, nil},
		{"nvidia-4gpu-workers-2", big(nvidiaGPUs(4)), plan.Options{Workers: 2}, nil},
		{"nvidia-2gpu-allow-join", joinable, plan.Options{AllowJoin: true}, nil},
		{"join-nvidia-1gpu", joiner, plan.Options{}, &bundle},
	}
}

func TestGoldens(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			plan, err := c.plan()
			require.NoError(t, err)
			out := t.TempDir()
			written, err := Write(state.Dir(out), plan)
			require.NoError(t, err)
			assert.Contains(t, written, compose.ComposeFile)

			golden := filepath.Join("testdata", "golden", c.name)
			got := readTree(t, out)
			if *update {
				require.NoError(t, os.RemoveAll(golden))
				for rel, b := range got {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(golden, rel)), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(golden, rel), b, 0o644))
				}
			}
			want := readTree(t, golden)
			assert.Equal(t, keys(want), keys(got), "files written (run go test ./lab -update to accept)")
			for rel, b := range want {
				assert.Equal(t, string(b), string(got[rel]), "%s differs from the golden (run go test ./lab -update to accept)", rel)
			}

			// Every golden loads back through compose-go with validation on.
			proj, err := compose.Load(context.Background(), golden)
			require.NoError(t, err)
			assert.Equal(t, plan.Project, proj.Name)
			assert.Len(t, proj.Services, c.services(plan))
		})
	}
}

// readTree maps every regular file under dir to its content; directories
// (the empty workspace) are checked separately.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	require.NoError(t, err)
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func render(t *testing.T, c goldenCase) *types.Project {
	t.Helper()
	_, dir := writeCase(t, c)
	proj, err := compose.Load(context.Background(), dir)
	require.NoError(t, err)
	return proj
}

func caseNamed(name string) goldenCase {
	for _, c := range goldenCases() {
		if c.name == name {
			return c
		}
	}
	panic(name)
}

func TestNvidiaWorkersGetTheirOwnGPUByUUID(t *testing.T) {
	proj := render(t, caseNamed("nvidia-4gpu-workers-2"))
	gpus := nvidiaGPUs(4)
	for i := 0; i < 2; i++ {
		s, err := proj.GetService(service.WorkerService(i))
		require.NoError(t, err)
		require.NotNil(t, s.Deploy)
		devs := s.Deploy.Resources.Reservations.Devices
		require.Len(t, devs, 1)
		assert.Equal(t, "nvidia", devs[0].Driver)
		assert.Equal(t, []string{gpus[i].UUID}, devs[0].IDs)
		assert.Equal(t, []string{"gpu"}, devs[0].Capabilities)
		assert.Zero(t, devs[0].Count, "count and device_ids together are refused by the engine")
		assert.Equal(t, gpus[i].UUID, s.Labels[labels.GPUUUID])
		assert.Equal(t, "cuda", *s.Environment["MLTRAIN_ACCELERATOR"])
	}
	_, err := proj.GetService(service.WorkerService(2))
	assert.Error(t, err, "--workers 2 on 4 GPUs makes exactly two workers")
}

func TestAMDWorkersGetKFDAndOnlyTheirRenderNode(t *testing.T) {
	proj := render(t, caseNamed("amd-2gpu"))
	for i := 0; i < 2; i++ {
		s, err := proj.GetService(service.WorkerService(i))
		require.NoError(t, err)
		var srcs []string
		for _, d := range s.Devices {
			srcs = append(srcs, d.Source)
		}
		assert.Equal(t, []string{"/dev/kfd", fmt.Sprintf("/dev/dri/renderD%d", 128+i)}, srcs)
		assert.Equal(t, []string{"44", "110"}, s.GroupAdd)
		assert.Nil(t, s.Deploy, "no NVIDIA device request on AMD")
		assert.Equal(t, "rocm", *s.Environment["MLTRAIN_ACCELERATOR"])
	}
}

func TestCPURehearsalHasNoDevicesAndLogicalGPUs(t *testing.T) {
	proj := render(t, caseNamed("cpu-rehearsal"))
	for i := 0; i < 2; i++ {
		s, err := proj.GetService(service.WorkerService(i))
		require.NoError(t, err)
		assert.Empty(t, s.Devices)
		assert.Nil(t, s.Deploy)
		assert.Contains(t, []string(s.Command), "--num-gpus=1")
		assert.Equal(t, "cpu", *s.Environment["MLTRAIN_ACCELERATOR"])
		assert.Equal(t, "rehearsal-"+service.WorkerService(i), s.ContainerName, "a non-default project prefixes container names")
	}
}

func TestPublishedPortsAndSecurityDefaults(t *testing.T) {
	proj := render(t, caseNamed("nvidia-2gpu"))
	published := map[uint32]string{}
	for _, s := range proj.Services {
		for _, p := range s.Ports {
			published[p.Target] = p.HostIP
		}
	}
	for _, port := range []uint32{8265, 3000, 8888, 9001} {
		assert.Equal(t, "0.0.0.0", published[port], "browser port %d on --bind", port)
	}
	for _, port := range []uint32{9000, 9090} {
		assert.Equal(t, "127.0.0.1", published[port], "port %d only on loopback", port)
	}
	for _, port := range []uint32{6379, 8080} {
		_, ok := published[port]
		assert.False(t, ok, "port %d is never published", port)
	}
	head, _ := proj.GetService(service.HeadService)
	assert.Equal(t, "token", *head.Environment["RAY_AUTH_MODE"])
	assert.Equal(t, fixedCreds.RayAuthToken, *head.Environment["RAY_AUTH_TOKEN"])
	assert.Equal(t, "http://129.114.27.10:3000", *head.Environment["RAY_GRAFANA_IFRAME_HOST"])
	graf, _ := proj.GetService(service.GrafanaService)
	assert.Equal(t, "Viewer", *graf.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"])
	for name, s := range proj.Services {
		assert.NotContains(t, s.Image, ":latest", name)
		require.NotNil(t, s.HealthCheck, name)
		assert.Equal(t, "CMD", s.HealthCheck.Test[0], "%s: exec-form healthcheck", name)
		assert.Equal(t, name, compose.ContainerName(proj, s), "the default project keeps the course's plain container names")
	}
	w, _ := proj.GetService(service.WorkerService(0))
	assert.Equal(t, types.ServiceConditionHealthy, w.DependsOn[service.HeadService].Condition)
	require.Len(t, w.Volumes, 1)
	assert.True(t, w.Volumes[0].ReadOnly)
	assert.Equal(t, "food11", proj.Volumes[VolumeData].Name)
	assert.True(t, bool(proj.Volumes[VolumeData].External))
}

// Property, at the Compose level: across random GPU lists, no device (NVIDIA
// UUID, AMD render node) appears in two workers' services except in share
// mode, and every worker outside CPU rehearsal has exactly one.
func TestPropertyRenderedDevicesAreDisjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rendered := 0
	for iter := 0; iter < 400; iter++ {
		n := 1 + rng.IntN(8)
		gpus := nvidiaGPUs(n)
		if rng.IntN(2) == 0 {
			gpus = amdGPUs(n)
		}
		rng.Shuffle(len(gpus), func(i, j int) { gpus[i], gpus[j] = gpus[j], gpus[i] })
		opts := plan.Options{Workers: rng.IntN(n + 1), ShareGPU: n == 1 && rng.IntN(2) == 0}
		if opts.ShareGPU {
			opts.Workers = 0
		}
		pl, err := plan.New(host.Facts{GPUs: gpu.Report{GPUs: gpus}, CPUs: 64, MemoryBytes: 64 << 30, RenderGID: 1, VideoGID: 2}, opts, fixedCreds)
		require.NoError(t, err)
		proj, err := Project(pl)
		require.NoError(t, err)
		rendered++
		owner := map[string]string{}
		for name, s := range proj.Services {
			if s.Labels[labels.Role] != string(service.RoleWorker) {
				assert.Empty(t, s.Devices, name)
				assert.Nil(t, s.Deploy, name)
				continue
			}
			var devs []string
			if s.Deploy != nil {
				for _, d := range s.Deploy.Resources.Reservations.Devices {
					devs = append(devs, d.IDs...)
				}
			}
			for _, d := range s.Devices {
				if d.Source != "/dev/kfd" { // KFD is the shared compute interface, not a GPU
					devs = append(devs, d.Source)
				}
			}
			require.Len(t, devs, 1, "%s has exactly one GPU", name)
			if prev, taken := owner[devs[0]]; taken && pl.Mode != plan.ModeShared {
				t.Fatalf("%s given to %s and %s", devs[0], prev, name)
			}
			owner[devs[0]] = name
		}
	}
	assert.Equal(t, 400, rendered)
}

// Every rendered service converts to an engine create request: nothing the
// renderer emits is refused by the apply step's converter.
func TestRenderedServicesConvertToEngineSpecs(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			proj := render(t, c)
			for name, s := range proj.Services {
				spec, err := compose.ToSpec(proj, s, map[string]string{})
				require.NoError(t, err, name)
				assert.Equal(t, s.ContainerName, spec.Name)
				for _, m := range spec.HostConfig.Mounts {
					if m.Type == "bind" {
						assert.True(t, filepath.IsAbs(m.Source), "%s: bind source %s resolved by Load", name, m.Source)
						_, err := os.Stat(m.Source)
						assert.NoError(t, err, "%s: bind source exists (the engine's mount API does not create it)", name)
					}
				}
				if s.Labels[labels.Role] == string(service.RoleWorker) && c.facts.GPUs.Vendor() == gpu.NVIDIA {
					require.Len(t, spec.HostConfig.DeviceRequests, 1, name)
					assert.Equal(t, [][]string{{"gpu"}}, spec.HostConfig.DeviceRequests[0].Capabilities)
					assert.Zero(t, spec.HostConfig.DeviceRequests[0].Count)
				}
			}
		})
	}
}

// writeCase plans case c and writes it into a fresh directory.
func writeCase(t *testing.T, c goldenCase) (plan.Plan, string) {
	t.Helper()
	plan, err := c.plan()
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = Write(state.Dir(dir), plan)
	require.NoError(t, err)
	return plan, dir
}

// MinIO's root key is MinIO's alone: Jupyter and the Ray nodes, where
// students' code runs, hold the lab user limited to the bucket "ray".
func TestOnlyMinIOHoldsTheRootKey(t *testing.T) {
	for _, c := range goldenCases() {
		proj := render(t, c)
		for name, s := range proj.Services {
			if name == service.MinIOService {
				assert.Equal(t, fixedCreds.MinIOAccessKey, *s.Environment["MINIO_ROOT_USER"])
				continue
			}
			for k, v := range s.Environment {
				require.NotNil(t, v, "%s %s", name, k)
				assert.NotEqual(t, fixedCreds.MinIOAccessKey, *v, "%s %s: MinIO's root user", name, k)
				assert.NotEqual(t, fixedCreds.MinIOSecretKey, *v, "%s %s: MinIO's root password", name, k)
			}
			if name == service.JupyterService || name == service.HeadService || strings.HasPrefix(name, "ray-worker-") {
				assert.Equal(t, fixedCreds.MinIOLabAccessKey, *s.Environment["AWS_ACCESS_KEY_ID"], name)
				assert.Equal(t, fixedCreds.MinIOLabSecretKey, *s.Environment["AWS_SECRET_ACCESS_KEY"], name)
			}
		}
	}
}

// goldenBundle is the bundle of the nvidia-2gpu-allow-join lab, with the
// fixed credentials.
func goldenBundle() plan.JoinBundle {
	hash, _ := dockerfiles.Hash(dockerfiles.RayCUDA, plan.DefaultRayVersion)
	return plan.JoinBundle{Lab: "mltrain", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: fixedCreds.RayAuthToken,
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: fixedCreds.MinIOLabAccessKey, S3Secret: fixedCreds.MinIOLabSecretKey,
		RayVersion: plan.DefaultRayVersion, Python: dockerfiles.PythonVersion, ImageHash: hash, ImageKind: string(dockerfiles.RayCUDA),
		PortBase: plan.DefaultRayPortBase}
}
