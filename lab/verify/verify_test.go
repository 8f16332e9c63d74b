package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/exercise"
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
	// 2 host, 7 containers, 2 gpu, 2 ray, 3 minio, 1 data, 3 metrics, 2 jupyter, 6 exercises
	assert.Len(t, r.Checks, 28)
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
	p.Mode, p.Vendor, p.Accelerator = lab.ModeCPU, "", lab.AccelCPU
	for i := range p.Workers {
		p.Workers[i].GPU = nil
	}
	f.setPlan(p)
}

func amdPlan(f *fixture) {
	p := f.plan
	p.Vendor, p.Accelerator = gpu.AMD, lab.AccelROCm
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
			p.Mode = lab.ModeShared
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

// anyKeyStore accepts every credential: a MinIO still on its defaults.
type anyKeyStore struct{ s Store }

func (a anyKeyStore) ListCheckpoints(ctx context.Context, b, p string) ([]store.Checkpoint, error) {
	return a.s.ListCheckpoints(ctx, b, p)
}

func TestMinIOChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "no bucket", id: "minio.bucket", break_: func(f *fixture) {
			empty := storetest.New(f.t) // a fresh double has no bucket
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: empty.URL, AccessKey: a, SecretKey: s})
			}
		}, evidence: `has no bucket "ray"`, fix: "mltrain up"},
		{name: "wrong credentials", id: "minio.bucket", break_: func(f *fixture) {
			f.deps.Creds.MinIOAccessKey = "someone-else"
		}, evidence: "credentials refused (InvalidAccessKeyId)"},
		{name: "minio down", id: "minio.bucket", break_: func(f *fixture) {
			f.deps.State.Probes.MinIO = "http://127.0.0.1:1"
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: "http://127.0.0.1:1", AccessKey: a, SecretKey: s})
			}
		}, evidence: "MinIO does not answer", fix: "mltrain logs minio"},
		{name: "minio down fails the credentials check fast too", id: "minio.credentials", break_: func(f *fixture) {
			f.deps.State.Probes.MinIO = "http://127.0.0.1:1"
		}, evidence: "connection refused", fix: "mltrain logs minio"},
		{name: "defaults accepted", id: "minio.credentials", break_: func(f *fixture) {
			good, err := f.deps.MinIO(f.deps.Creds.MinIOAccessKey, f.deps.Creds.MinIOSecretKey)
			require.NoError(t, err)
			f.deps.MinIO = func(string, string) (Store, error) { return anyKeyStore{good}, nil }
		}, evidence: "accepts the default credentials your-access-key/your-secret-key", fix: "compose.override.yaml"},
		{name: "container on minioadmin", id: "minio.credentials", break_: func(f *fixture) {
			f.eng.Containers["minio"].Env = []string{"MINIO_ROOT_USER=minioadmin", "MINIO_ROOT_PASSWORD=minioadmin"}
		}, evidence: `default MinIO root user "minioadmin"`},
		{name: "container on other key", id: "minio.credentials", break_: func(f *fixture) {
			f.eng.Containers["minio"].Env = []string{"MINIO_ROOT_USER=mine", "MINIO_ROOT_PASSWORD=longpassword"}
		}, evidence: `root user "mine", not the lab's generated key`},
		{name: "credentials file holds a default", id: "minio.credentials", break_: func(f *fixture) {
			f.deps.Creds.MinIOAccessKey = "your-access-key"
		}, evidence: "credentials file holds a default MinIO key", fix: "credentials.json"},
		{name: "jupyter holds the root key", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = append(f.eng.Containers["jupyter"].Env, "AWS_SECRET_ACCESS_KEY="+storetest.SecretKey)
		}, evidence: "container jupyter holds MinIO's root credentials (AWS_SECRET_ACCESS_KEY)", fix: "compose.override.yaml"},
		{name: "a worker holds the root user", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["ray-worker-1"].Env = []string{"AWS_ACCESS_KEY_ID=" + storetest.AccessKey}
		}, evidence: "container ray-worker-1 holds MinIO's root credentials (AWS_ACCESS_KEY_ID)"},
		{name: "jupyter without the lab user", id: "minio.lab-user", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"AWS_ACCESS_KEY_ID=someone"}
		}, evidence: `has AWS_ACCESS_KEY_ID "someone", not the lab user "labuser"`, fix: "mltrain up"},
		{name: "lab user missing in MinIO", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.Creds.MinIOLabAccessKey = "nouser"
			f.eng.Containers["jupyter"].Env = []string{"AWS_ACCESS_KEY_ID=nouser"}
		}, evidence: "the lab user nouser cannot list bucket \"ray\"", fix: "mltrain up"},
		{name: "lab user unlimited", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.MinIO = func(a, s string) (Store, error) {
				return store.New(store.Config{Endpoint: f.s3.URL, AccessKey: storetest.AccessKey, SecretKey: s}) // as root: nothing refused
			}
		}, evidence: `reaches buckets outside "ray"`, fix: "mltrain up"},
		{name: "no lab user in the credentials file", id: "minio.lab-user", break_: func(f *fixture) {
			f.deps.Creds.MinIOLabAccessKey = ""
		}, evidence: "has no MinIO lab user", fix: "mltrain up"},
	})
}

func TestDataChecks(t *testing.T) {
	counts := canonicalCounts()
	runFailures(t, []failure{
		{name: "no volume", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return nil, fmt.Errorf("dataset volume food11 does not exist: %w", docker.ErrNotFound)
			}
		}, evidence: "dataset volume food11 does not exist", fix: "mltrain data food11 --volume food11"},
		{name: "no manifest", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) { return nil, nil }
		}, evidence: "has no manifest", fix: "mltrain data food11"},
		{name: "not the published dataset", id: "data.food11", break_: func(f *fixture) {
			c := food11.Counts{"training": {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return &food11.Manifest{Counts: c, Files: 11}, nil
			}
		}, evidence: "training has 11 images; canonical Food-11 has 9,866", fix: "--force"},
		{name: "inconsistent manifest", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return &food11.Manifest{Counts: counts, Files: 12}, nil
			}
		}, evidence: "12 files, but its counts add up to 16643"},
		{name: "engine error", id: "data.food11", break_: func(f *fixture) {
			f.deps.Manifest = func(context.Context, string) (*food11.Manifest, error) {
				return nil, errors.New("create helper container: engine says no")
			}
		}, evidence: "engine says no"},
	})
	t.Run("full count", func(t *testing.T) {
		f := newFixture(t)
		f.deps.DataVerify = func(context.Context, string) (food11.Report, error) {
			return food11.Report{Files: counts.Total(), Found: counts, OK: true}, nil
		}
		r := f.run(Options{DataFull: true, Only: []string{GroupData}})
		require.Len(t, r.Checks, 1)
		assert.Equal(t, Pass, r.Checks[0].Status, r.Checks[0].Evidence)
		assert.Contains(t, r.Checks[0].Evidence, "counted 16643 images")

		f.deps.DataVerify = func(context.Context, string) (food11.Report, error) {
			return food11.Report{}, clierr.Hintf("load it again with 'mltrain data food11 --force --volume food11'", "volume food11: counts differ from the manifest")
		}
		r = f.run(Options{DataFull: true, Only: []string{GroupData}})
		assert.Equal(t, Fail, r.Checks[0].Status)
		assert.Contains(t, r.Checks[0].Evidence, "counts differ from the manifest")
		assert.Contains(t, r.Checks[0].Fix, "--force")
	})
}

func TestMetricsChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "no ray targets", id: "metrics.prometheus", break_: func(f *fixture) { f.targets = nil },
			evidence: "no active target of job 'ray'", fix: "prom_metrics_service_discovery.json"},
		{name: "a node's target down", id: "metrics.prometheus", break_: func(f *fixture) {
			f.targets[1].Health, f.targets[1].LastError = "down", "connection refused"
		}, evidence: "no 'up' Ray target for alive node(s) " + w0IP},
		{name: "stale target of a dead node is fine", id: "metrics.prometheus", status: Pass, break_: func(f *fixture) {
			f.targets = append(f.targets, promTarget{Labels: map[string]string{"job": "ray"}, ScrapeURL: "http://172.18.0.9:8080/metrics", Health: "down"})
		}, evidence: "1 stale target(s)"},
		{name: "prometheus down", id: "metrics.prometheus", break_: func(f *fixture) {
			f.deps.State.Probes.Prometheus = "http://127.0.0.1:1"
		}, evidence: "connection refused", fix: "mltrain logs prometheus"},
		{name: "grafana database", id: "metrics.grafana", break_: func(f *fixture) { f.grafanaDB = "failing" },
			evidence: `database "failing"`, fix: "mltrain logs grafana"},
		{name: "no ray dashboards", id: "metrics.grafana", break_: func(f *fixture) {
			f.dashboards = []grafanaDash{{UID: "x", Title: "Mine", FolderTitle: "General"}}
		}, evidence: "no dashboard in folder 'Ray' (1 dashboards in all)"},
		{name: "provisioning file gone", id: "metrics.grafana", break_: func(f *fixture) {
			require.NoError(t, os.Remove(f.deps.StateDir.File(lab.GrafanaDashboards)))
		}, evidence: "provisioning file", fix: "mltrain up"},
		{name: "ray cannot reach grafana", id: "metrics.ray", break_: func(f *fixture) {
			f.grafanaHealth = map[string]any{"result": false, "msg": "Grafana healthcheck failed: connection refused"}
		}, evidence: "Grafana healthcheck failed", fix: "RAY_GRAFANA_HOST"},
		{name: "grafana lacks ray's dashboard", id: "metrics.ray", break_: func(f *fixture) {
			f.dashboards = f.dashboards[1:]
		}, evidence: `no dashboard with uid "rayDefaultDashboard"`},
	})
}

func TestJupyterChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "api refuses", id: "jupyter.api", break_: func(f *fixture) { f.jupyterCode = 503 },
			evidence: "HTTP 503", fix: "mltrain logs jupyter"},
		{name: "no RAY_ADDRESS", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_AUTH_TOKEN=" + token}
		}, evidence: "has no RAY_ADDRESS", fix: "compose.override.yaml"},
		{name: "RAY_ADDRESS elsewhere", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=http://10.0.0.1:8265", "RAY_AUTH_TOKEN=" + token}
		}, evidence: "not the lab's head"},
		{name: "ray client address", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=ray://ray-head:10001", "RAY_AUTH_TOKEN=" + token}
		}, evidence: "not a dashboard HTTP address"},
		{name: "no token", id: "jupyter.ray-address", break_: func(f *fixture) {
			f.eng.Containers["jupyter"].Env = []string{"RAY_ADDRESS=http://ray-head:8265"}
		}, evidence: "RAY_AUTH_TOKEN is not set"},
		{name: "no container", id: "jupyter.ray-address", break_: func(f *fixture) {
			delete(f.eng.Containers, "jupyter")
		}, evidence: "no jupyter container", fix: "mltrain up"},
	})
}

func setRec(f *fixture, name string, fn func(r *exercise.Record)) {
	r := f.recs[name]
	fn(&r)
	f.recs[name] = r
}

func setJob(f *fixture, id string, st ray.JobStatus) {
	for i := range f.ray.jobs {
		if f.ray.jobs[i].SubmissionID == id {
			f.ray.jobs[i].Status = st
			f.ray.jobs[i].Message = "Job failed."
		}
	}
}

func TestExerciseChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "never run", id: "exercises.tune", break_: func(f *fixture) { delete(f.recs, "tune") },
			evidence: "exercise tune has not been run on this lab", fix: "mltrain lab tune"},
		{name: "ran badly", id: "exercises.multi", break_: func(f *fixture) {
			setRec(f, "multi", func(r *exercise.Record) { r.OK, r.Problems = false, []string{"the training workers ran on 1 node(s)"} })
		}, evidence: "did not behave as expected: the training workers ran on 1 node(s)", fix: "mltrain lab multi"},
		{name: "records unreadable", id: "exercises.submit", break_: func(f *fixture) {
			f.deps.Records = func() (map[string]exercise.Record, error) { return nil, errors.New("exercise submit record: bad JSON") }
		}, evidence: "bad JSON", fix: "mltrain lab submit"},
		{name: "job not in ray history", id: "exercises.submit", break_: func(f *fixture) {
			f.ray.jobs = f.ray.jobs[1:]
		}, evidence: "job sub-1 (recorded by exercise submit) is not in Ray's job history", fix: "mltrain lab submit"},
		{name: "ray jobs unreachable", id: "exercises.submit", break_: func(f *fixture) {
			f.ray.jobsErr = errors.New("list jobs: boom")
		}, evidence: "boom"},
		{name: "ray says failed", id: "exercises.submit", break_: func(f *fixture) { setJob(f, "sub-1", ray.Failed) },
			evidence: "Ray has job sub-1 FAILED (Job failed.), not SUCCEEDED"},
		{name: "infeasible ran after all", id: "exercises.infeasible", break_: func(f *fixture) { setJob(f, "inf-1", ray.Succeeded) },
			evidence: "found resources for it after all"},
		{name: "infeasible without demand", id: "exercises.infeasible", break_: func(f *fixture) {
			setRec(f, "infeasible", func(r *exercise.Record) { r.Infeasible.Demand = nil })
		}, evidence: "never listed its {'GPU': 2.0} demand"},
		{name: "infeasible left pending", id: "exercises.infeasible", break_: func(f *fixture) {
			setRec(f, "infeasible", func(r *exercise.Record) { r.Infeasible.StayedPending = false })
		}, evidence: "left PENDING after 30s"},
		{name: "multi on one node", id: "exercises.multi", break_: func(f *fixture) {
			setRec(f, "multi", func(r *exercise.Record) { r.Jobs[0].NodeIPs = []string{w0IP} })
		}, evidence: "ran on 1 node(s)"},
		{name: "fractional not all at once", id: "exercises.fractional", break_: func(f *fixture) {
			setRec(f, "fractional", func(r *exercise.Record) { r.Fractional.MaxConcurrent = 2 })
		}, evidence: "at most 2 of the three 0.5-GPU jobs trained at the same time"},
		{name: "fractional job failed", id: "exercises.fractional", break_: func(f *fixture) { setJob(f, "frac-2", ray.Failed) },
			evidence: "Ray has job frac-2 FAILED"},
		{name: "fractional passes", id: "exercises.fractional", status: Pass, break_: func(*fixture) {},
			evidence: "3 jobs at 0.5 GPU trained at the same time (frac-1, frac-2, frac-3)"},
		{name: "fault passes after retention deleted the resumed checkpoint", id: "exercises.fault", status: Pass, break_: func(*fixture) {},
			evidence: "from s3://ray/fault-run/checkpoint_epoch_000001, registered before the stop; MinIO held it then"},
		{name: "fault stopped before a registered checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.RegisteredAtStop = false })
		}, evidence: "ray-worker-0 was stopped before Ray Train had registered a checkpoint"},
		{name: "fault resumed from an unreported checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedFromReported = false })
		}, evidence: "not one Ray Train had reported registered"},
		{name: "fault resumed from an older checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) {
				r.Fault.ResumedFrom, r.Fault.ResumedFromLatest = "fault-run/checkpoint_epoch_000000", false
			})
		}, evidence: "older than fault-run/checkpoint_epoch_000001"},
		{name: "fault checkpoint never in minio", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.CheckpointInMinIO = false })
		}, evidence: "MinIO did not list it when training resumed"},
		{name: "fault run has no checkpoint in minio now", id: "exercises.fault", break_: func(f *fixture) {
			f.s3.Delete("ray", "fault-run/checkpoint_epoch_000008/checkpoint.ckpt")
			f.s3.Delete("ray", "fault-run/checkpoint_epoch_000009/checkpoint.ckpt")
		}, evidence: "MinIO holds no checkpoint of run fault-run now"},
		{name: "fault resumed on the stopped node", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedOnNodeIP = w0IP })
		}, evidence: "resumed on the stopped node"},
		{name: "fault never resumed", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedFrom = "" })
		}, evidence: "did not resume from a checkpoint"},
		{name: "tune passes with trials the script ended", id: "exercises.tune", status: Pass, break_: func(*fixture) {},
			evidence: "8 trials: 3 stopped by ASHA, 3 ran to max_t 4, 2 ended by the script before max_t"},
		{name: "tune stopped none early", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) {
				r.Tune.StoppedByScheduler, r.Tune.StoppedEarly, r.Tune.EndedByScript = 0, 0, 5
			})
		}, evidence: "ASHA stopped none of the 8 trials (0 stopped by ASHA, 3 ran to max_t 4, 5 ended by the script before max_t"},
		{name: "tune record that cannot tell ASHA's stops", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) {
				r.Tune.EndsKnown, r.Tune.StoppedByScheduler, r.Tune.EndedByScript, r.Tune.StoppedEarly = false, 0, 0, 5
			})
		}, evidence: "cannot tell which of the 5 shorter trials ASHA stopped"},
		{name: "tune none completed", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) { r.Tune.Completed = 0 })
		}, evidence: "no trial ran to max_t 4"},
		{name: "tune old record", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) { r.Tune = nil })
		}, evidence: "has no observation"},
	})
}

func TestOnlySelectsGroups(t *testing.T) {
	f := newFixture(t)
	r := f.run(Options{Only: []string{GroupRay, GroupMinIO}})
	var ids []string
	for _, c := range r.Checks {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"ray.nodes", "ray.auth", "minio.bucket", "minio.credentials", "minio.lab-user"}, ids)
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
