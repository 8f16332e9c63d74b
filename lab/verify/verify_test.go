package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/plan"
)

func TestEveryCheckPassesOnAGoodLab(t *testing.T) {
	f := newFixture(t)
	r := f.run(Options{Timeout: 5 * time.Second})
	for _, c := range r.Checks {
		assert.Equal(t, Pass, c.Status, "%s: %s (fix: %s)", c.ID, c.Evidence, c.Fix)
		assert.NotEmpty(t, c.Evidence, c.ID)
	}
	assert.True(t, r.OK)
	assert.Equal(t, len(r.Checks), r.Passed)
	// 2 host, 7 containers, 2 gpu, 2 ray, 4 minio, 1 data, 3 metrics, 2 jupyter, 6 exercises
	assert.Len(t, r.Checks, 29)
	var groups []string
	for _, c := range r.Checks {
		if len(groups) == 0 || groups[len(groups)-1] != c.Group {
			groups = append(groups, c.Group)
		}
	}
	assert.Equal(t, Groups, groups, "checks are reported group by group, in order")
	gv := find(t, r, "gpu.visible")
	assert.Contains(t, gv.Evidence, "ray-worker-0 sees "+uuidA+" only")
	assert.Contains(t, gv.Evidence, "ray-worker-1 sees "+uuidB+" only")
	assert.Contains(t, find(t, r, "ray.auth").Evidence, "no token -> 401")
	assert.Contains(t, find(t, r, "minio.credentials").Evidence, "minioadmin/minioadmin refused (InvalidAccessKeyId)")
	assert.Contains(t, find(t, r, "minio.private").Evidence, "anonymous list and read refused")
	assert.Contains(t, find(t, r, "data.food11").Evidence, "16643 images")
	assert.Contains(t, find(t, r, "metrics.ray").Evidence, `default dashboard "rayDefaultDashboard" is in Grafana`)
	assert.Contains(t, find(t, r, "exercises.fault").Evidence, "resumed on ray-worker-1 from s3://ray/fault-run/checkpoint_epoch_000001")
}

func find(t *testing.T, r Report, id string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s", id)
	return Check{}
}

// failure is one broken thing and what its check must say.
type failure struct {
	name     string
	id       string
	status   Status
	break_   func(f *fixture)
	evidence string
	fix      string
}

func runFailures(t *testing.T, cases []failure) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.break_(f)
			c := f.check(tc.id)
			want := tc.status
			if want == "" {
				want = Fail
			}
			assert.Equal(t, want, c.Status, "evidence: %s", c.Evidence)
			assert.Contains(t, c.Evidence, tc.evidence)
			if tc.fix != "" {
				assert.Contains(t, c.Fix, tc.fix)
			}
			if want == Fail {
				assert.NotEmpty(t, c.Fix, "a failed check says what to run next")
			}
		})
	}
}

func cpuPlan(f *fixture) {
	p := f.plan
	p.Mode, p.Vendor, p.Accelerator = plan.ModeCPU, "", plan.AccelCPU
	for i := range p.Workers {
		p.Workers[i].GPU = nil
	}
	f.setPlan(p)
}

func amdPlan(f *fixture) {
	p := f.plan
	p.Vendor, p.Accelerator = gpu.AMD, plan.AccelROCm
	for i := range p.Workers {
		g := *p.Workers[i].GPU
		g.Vendor, g.RenderNode = gpu.AMD, fmt.Sprintf("/dev/dri/renderD%d", 128+i)
		p.Workers[i].GPU = &g
	}
	f.setPlan(p)
}

func TestHostChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "detection error", id: "host.gpus", break_: func(f *fixture) {
			f.deps.DetectGPUs = func(context.Context) (gpu.Report, error) {
				return gpu.Report{}, clierr.Hintf("set MLTRAIN_SYSFS_ROOT to a real root", "sysfs root /nope does not exist")
			}
		}, evidence: "sysfs root /nope", fix: "MLTRAIN_SYSFS_ROOT"},
		{name: "driver broken", id: "host.gpus", break_: func(f *fixture) {
			f.gpus = gpu.Report{Problems: []gpu.Problem{{Code: gpu.CodeLibraryMissing, Message: "NVML is missing", Fix: "sudo apt install nvidia-utils"}}}
		}, evidence: "present but not usable: NVML is missing", fix: "nvidia-utils"},
		{name: "planned GPU gone", id: "host.gpus", break_: func(f *fixture) {
			f.gpus.GPUs = f.gpus.GPUs[:1]
		}, evidence: "ray-worker-1's GPU " + uuidB + " (NVIDIA A100-PCIE-40GB) is not detected", fix: "mltrain doctor"},
		{name: "rehearsal on a GPU host", id: "host.gpus", break_: cpuPlan,
			evidence: "planned as a CPU rehearsal", fix: "mltrain down && mltrain up"},
		{name: "rehearsal without GPUs passes", id: "host.gpus", status: Pass, break_: func(f *fixture) {
			cpuPlan(f)
			f.gpus = gpu.Report{Problems: []gpu.Problem{{Code: gpu.CodeNoGPU, Message: "no GPU"}}}
		}, evidence: "mode rehearsal (CPU only), 2 workers with 1 logical GPU each"},
		{name: "standard passes with assignment", id: "host.gpus", status: Pass, break_: func(*fixture) {},
			evidence: "mode standard: ray-worker-0=GPU 0, ray-worker-1=GPU 1"},
		{name: "no nvidia runtime", id: "host.plumbing", break_: func(f *fixture) {
			f.eng.InfoValue.Runtimes = []string{"runc"}
		}, evidence: "no 'nvidia' runtime (runtimes: runc)", fix: doctor.FixNVIDIARuntime},
		{name: "CDI is enough", id: "host.plumbing", status: Pass, break_: func(f *fixture) {
			f.eng.InfoValue.Runtimes = []string{"runc"}
			f.eng.InfoValue.CDIDevices = []string{"nvidia.com/gpu=1", "nvidia.com/gpu=0"}
		}, evidence: "CDI devices: nvidia.com/gpu=0, nvidia.com/gpu=1"},
		{name: "engine down", id: "host.plumbing", break_: func(f *fixture) {
			f.eng.InfoErr = errors.New("cannot connect to the Docker daemon")
		}, evidence: "cannot connect", fix: "mltrain doctor"},
		{name: "amd kfd missing", id: "host.plumbing", break_: func(f *fixture) {
			amdPlan(f)
			f.deps.Access = func(dev string) error { return fmt.Errorf("%s: %w", dev, fs.ErrNotExist) }
		}, evidence: "/dev/kfd does not exist", fix: "modprobe amdgpu"},
		{name: "amd render node permission", id: "host.plumbing", break_: func(f *fixture) {
			amdPlan(f)
			f.deps.Access = func(dev string) error {
				if dev == "/dev/dri/renderD129" {
					return fs.ErrPermission
				}
				return nil
			}
		}, evidence: "permission denied on /dev/dri/renderD129", fix: doctor.FixAMDGroups},
		{name: "amd devices usable", id: "host.plumbing", status: Pass, break_: amdPlan,
			evidence: "/dev/kfd, /dev/dri/renderD128, /dev/dri/renderD129 exist"},
		{name: "rehearsal skips plumbing", id: "host.plumbing", status: Skip, break_: cpuPlan, evidence: "no GPU device"},
	})
}

func setContainer(f *fixture, name string, fn func(d *docker.ContainerDetails)) {
	f.eng.Containers[name].State = "running"
	fn(f.eng.Containers[name])
	f.eng.Containers[name].Container.State = f.eng.Containers[name].State
}

func TestContainerChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "missing", id: "containers.grafana", break_: func(f *fixture) {
			delete(f.eng.Containers, "grafana")
		}, evidence: `lab "mltrain" has no grafana container`, fix: "mltrain up"},
		{name: "worker exited", id: "containers.ray-worker-1", break_: func(f *fixture) {
			setContainer(f, "ray-worker-1", func(d *docker.ContainerDetails) { d.Running, d.State, d.ExitCode = false, "exited", 137 })
		}, evidence: "ray-worker-1 is exited with code 137", fix: "mltrain worker start 1"},
		{name: "head oom", id: "containers.ray-head", break_: func(f *fixture) {
			setContainer(f, "ray-head", func(d *docker.ContainerDetails) { d.Running, d.State, d.OOMKilled = false, "exited", true })
		}, evidence: "out of memory", fix: "mltrain up"},
		{name: "unhealthy", id: "containers.minio", break_: func(f *fixture) {
			setContainer(f, "minio", func(d *docker.ContainerDetails) { d.Health = "unhealthy" })
		}, evidence: "healthcheck fails", fix: "mltrain logs minio"},
		{name: "starting", id: "containers.jupyter", break_: func(f *fixture) {
			setContainer(f, "jupyter", func(d *docker.ContainerDetails) { d.Health = "starting" })
		}, evidence: "not healthy yet", fix: "mltrain verify"},
		{name: "no healthcheck is fine when running", id: "containers.prometheus", status: Pass, break_: func(f *fixture) {
			setContainer(f, "prometheus", func(d *docker.ContainerDetails) { d.Health = "" })
		}, evidence: "running, no healthcheck"},
	})
}

func TestGPUChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "worker sees two GPUs", id: "gpu.visible", break_: func(f *fixture) {
			f.uuids["ray-worker-1"] = uuidA + "\n" + uuidB
		}, evidence: "ray-worker-1 sees 2 GPUs (" + uuidA + ", " + uuidB + "), not exactly 1", fix: "mltrain down && mltrain up"},
		{name: "two workers one GPU", id: "gpu.visible", break_: func(f *fixture) {
			f.uuids["ray-worker-1"] = uuidA
		}, evidence: uuidA + " is visible to ray-worker-0 and ray-worker-1"},
		{name: "sees another GPU than planned", id: "gpu.visible", break_: func(f *fixture) {
			f.uuids["ray-worker-0"] = uuidB
			f.uuids["ray-worker-1"] = uuidA
		}, evidence: "ray-worker-0 sees " + uuidB + ", but was given " + uuidA},
		{name: "no GPU visible", id: "gpu.visible", break_: func(f *fixture) {
			f.uuids["ray-worker-0"] = "No devices were found"
		}, evidence: "ray-worker-0 sees 0 GPUs (none)"},
		{name: "nvidia-smi fails", id: "gpu.visible", break_: func(f *fixture) {
			f.eng.ExecFunc = func(string, []string) (docker.ExecResult, error) {
				return docker.ExecResult{ExitCode: 9, Stderr: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"}, nil
			}
		}, evidence: "exited 9: NVIDIA-SMI has failed", fix: "mltrain doctor"},
		{name: "exec error", id: "gpu.visible", break_: func(f *fixture) {
			f.eng.ExecFunc = func(string, []string) (docker.ExecResult, error) {
				return docker.ExecResult{}, errors.New("exec: no such file")
			}
		}, evidence: "could not run in ray-worker-0: exec: no such file"},
		{name: "worker stopped", id: "gpu.visible", break_: func(f *fixture) {
			setContainer(f, "ray-worker-1", func(d *docker.ContainerDetails) { d.Running, d.State = false, "exited" })
		}, evidence: "ray-worker-1: container ray-worker-1 is not running", fix: "mltrain worker start 1"},
		{name: "rehearsal skips", id: "gpu.visible", status: Skip, break_: cpuPlan, evidence: "no GPU device to list"},
		{name: "shared GPU is expected in share mode", id: "gpu.visible", status: Pass, break_: func(f *fixture) {
			p := f.plan
			p.Mode = plan.ModeShared
			p.Workers[1].GPU = p.Workers[0].GPU
			f.setPlan(p)
			f.uuids["ray-worker-1"] = uuidA
		}, evidence: "shared by design"},
		{name: "amd by rocminfo", id: "gpu.visible", status: Pass, break_: func(f *fixture) {
			amdPlan(f)
			f.eng.ExecFunc = func(name string, cmd []string) (docker.ExecResult, error) {
				if cmd[0] != "rocminfo" {
					return docker.ExecResult{ExitCode: 127}, nil
				}
				u := map[string]string{"ray-worker-0": uuidA, "ray-worker-1": uuidB}[name]
				return docker.ExecResult{Stdout: "Agent 1\n  Uuid:                    CPU-XX\nAgent 2\n  Uuid:                    " + u + "\n"}, nil
			}
		}, evidence: "ray-worker-1 sees " + uuidB + " only"},
		{name: "worker advertises 2 GPUs", id: "gpu.ray", break_: func(f *fixture) {
			f.ray.nodes[2].ResourcesTotal["GPU"] = 2
		}, evidence: "worker node ray-worker-1 (" + w1IP + ") advertises 2 GPU, not 1", fix: "--num-gpus=1"},
		{name: "head advertises a GPU", id: "gpu.ray", break_: func(f *fixture) {
			f.ray.nodes[0].ResourcesTotal["GPU"] = 1
		}, evidence: "the head (" + headIP + ") advertises 1 GPU"},
		{name: "no alive worker", id: "gpu.ray", break_: func(f *fixture) {
			f.ray.nodes = f.ray.nodes[:1]
		}, evidence: "no alive worker node"},
		{name: "a stopped worker's node is not counted", id: "gpu.ray", status: Pass, break_: stopWorker1,
			evidence: "not counted: ray-worker-1's node (container exited; Ray has not marked it DEAD yet)"},
		{name: "ray unreachable", id: "gpu.ray", break_: func(f *fixture) {
			f.ray.nodesErr = clierr.WithHint(fmt.Errorf("%w at http://x", ray.ErrUnreachable), "run 'mltrain status'")
		}, evidence: "unreachable", fix: "mltrain status"},
	})
}

// stopWorker1 stops ray-worker-1 as the engine does (exited, no address)
// while Ray, whose health checks have not failed enough yet, lists its
// node ALIVE.
func stopWorker1(f *fixture) {
	setContainer(f, "ray-worker-1", func(d *docker.ContainerDetails) {
		d.Running, d.State, d.FinishedAt = false, "exited", time.Now().Add(-3*time.Second)
		d.Networks = map[string]string{"mltrain_default": ""}
	})
}

func TestRayChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "worker stopped", id: "ray.nodes", break_: func(f *fixture) {
			f.ray.nodes[2].State = "DEAD"
			setContainer(f, "ray-worker-1", func(d *docker.ContainerDetails) { d.Running, d.State = false, "exited" })
		}, evidence: "1 head + 1 worker node(s) ALIVE", fix: "mltrain worker start 1"},
		{name: "worker stopped, Ray has not noticed yet", id: "ray.nodes", break_: stopWorker1,
			evidence: "ray-worker-1: container exited 3s ago; Ray still lists the node ALIVE: it marks it DEAD after its health checks time out, ~15s",
			fix:      "mltrain worker start 1"},
		{name: "worker running but not joined", id: "ray.nodes", break_: func(f *fixture) {
			f.ray.nodes = f.ray.nodes[:2]
		}, evidence: "ray-worker-1: running, but Ray lists no ALIVE node at its address", fix: "mltrain logs ray-worker-1"},
		{name: "no head", id: "ray.nodes", break_: func(f *fixture) {
			f.ray.nodes[0].State = "DEAD"
		}, evidence: "0 head + 2 worker", fix: "mltrain logs ray-head"},
		{name: "token rejected", id: "ray.nodes", break_: func(f *fixture) {
			f.ray.nodesErr = clierr.WithHint(fmt.Errorf("rejected (%w)", ray.ErrAuthInvalid), "use the lab's Ray token")
		}, evidence: "rejected", fix: "use the lab's Ray token"},
		{name: "auth off", id: "ray.auth", break_: func(f *fixture) { f.authOff = true },
			evidence: "without a token answered 200", fix: "RAY_AUTH_MODE=token"},
		{name: "any token accepted", id: "ray.auth", break_: func(f *fixture) { f.wrongTokenOK = true },
			evidence: "with a wrong token answered HTTP 200", fix: "RAY_AUTH_MODE=token"},
		{name: "dashboard down", id: "ray.auth", break_: func(f *fixture) {
			f.deps.State.Probes.Ray = "http://127.0.0.1:1"
		}, evidence: "connection refused", fix: "mltrain status"},
	})
}

func TestOnlySelectsGroups(t *testing.T) {
	f := newFixture(t)
	r := f.run(Options{Only: []string{GroupRay, GroupMinIO}})
	var ids []string
	for _, c := range r.Checks {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"ray.nodes", "ray.auth", "minio.bucket", "minio.credentials", "minio.lab-user", "minio.private"}, ids)
	assert.Equal(t, []string{GroupRay, GroupMinIO}, r.Only)

	got, err := ValidateOnly([]string{"ray,MinIO", " exercises ", "ray"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ray", "minio", "exercises"}, got)
	_, err = ValidateOnly([]string{"ray,gpus"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--only "gpus" is not a check group`)
	assert.Contains(t, clierr.Hint(err), "host, containers, gpu")
}

func TestAHangingCheckFailsOnItsTimeoutAndTheOthersFinish(t *testing.T) {
	f := newFixture(t)
	f.ray.block = make(chan struct{})
	defer close(f.ray.block)
	r := f.run(Options{Timeout: 200 * time.Millisecond, Only: []string{GroupRay, GroupJupyter}})
	assert.False(t, r.OK)
	n := find(t, r, "ray.nodes")
	assert.Equal(t, Fail, n.Status)
	assert.Contains(t, n.Evidence, "no answer within 200ms")
	assert.Contains(t, n.Fix, "--timeout")
	assert.Equal(t, Pass, find(t, r, "jupyter.api").Status, "other checks are not held up")
	assert.Equal(t, Pass, find(t, r, "ray.auth").Status)
	assert.Less(t, r.Seconds, 5.0)
}

func TestAPanickingCheckIsAFailedRow(t *testing.T) {
	f := newFixture(t)
	f.deps.DetectGPUs = func(context.Context) (gpu.Report, error) { panic("boom") }
	c := f.check("host.gpus")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Evidence, "internal error in check host.gpus: boom")
}

func TestMissingDepsFailInsteadOfPanicking(t *testing.T) {
	f := newFixture(t)
	f.deps = Deps{State: f.deps.State}
	r := f.run(Options{Timeout: time.Second})
	for _, c := range r.Checks {
		assert.NotContains(t, c.Evidence, "internal error", c.ID)
		if c.Status == Fail {
			assert.NotEmpty(t, c.Fix, c.ID)
		}
	}
	assert.False(t, r.OK)
}
