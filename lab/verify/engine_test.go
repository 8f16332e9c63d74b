package verify

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	labplan "github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// noGPURoot is a fixture host without GPUs, so the host checks do not depend
// on the machine the tests run on.
const noGPURoot = "../../internal/gpu/testdata/none"

// The stand-in workers answer nvidia-smi with these (compose.override.yaml).
const (
	standinUUID0 = "GPU-5a0e0000-0000-0000-0000-0000000000a0"
	standinUUID1 = "GPU-5a0e0000-0000-0000-0000-0000000000a1"
)

// standinLab is a CPU-rehearsal lab of stand-ins (real MinIO) brought up on
// the real engine on free loopback ports; removed (volumes too) at the end.
type standinLab struct {
	eng      docker.Engine
	project  string
	stateDir state.Dir
}

func upStandinLab(t testing.TB) *standinLab {
	t.Helper()
	eng := dockertest.Engine(t)
	o := labtest.LabOptions(t, eng, "mltv")
	s := &standinLab{eng: eng, project: o.Project, stateDir: state.Dir(t.TempDir())}
	require.NoError(t, os.WriteFile(s.stateDir.File(compose.OverrideFile), []byte(
		"services:\n"+
			"  ray-worker-0:\n    environment:\n      STANDIN_GPU_UUIDS: "+standinUUID0+"\n"+
			"  ray-worker-1:\n    environment:\n      STANDIN_GPU_UUIDS: "+standinUUID1+"\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := lifecycle.Up(ctx, lifecycle.UpDeps{Engine: eng, Detect: func(context.Context) (host.Facts, error) {
		return labtest.RehearsalFacts(), nil
	}}, lifecycle.UpOptions{StateDir: s.stateDir, Lab: o, Images: images.Options{Pull: images.PullNever},
		Timeout: 2 * time.Minute, StopTimeout: 2 * time.Second})
	require.NoError(t, err)
	return s
}

// writeManifest puts a manifest with the published counts into the lab's
// dataset volume.
func (s *standinLab) writeManifest(t testing.TB) {
	labtest.WriteManifest(t, s.eng, s.project+"-food11")
}

func (s *standinLab) deps(t testing.TB) Deps {
	t.Helper()
	d, err := System(s.eng, s.stateDir, SystemOptions{HelperLabels: map[string]string{dockertest.TestLabel: "1"},
		Host: host.Options{Root: noGPURoot}})
	require.NoError(t, err)
	return d
}

func TestVerifyOnAStandinLab(t *testing.T) {
	s := upStandinLab(t)
	s.writeManifest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, exercise.SaveRecord(s.stateDir, exercise.Record{Exercise: "submit", OK: true,
		Jobs: []exercise.JobRun{{SubmissionID: "mltrain-submit-1", Status: "SUCCEEDED", Result: &exercise.Result{Mode: "plain"}}}}))

	// Containers report healthy after their first healthcheck (5 s after
	// start), Prometheus sees the workers once the head has written them into
	// the service-discovery file: until then verify rightly fails.
	var r Report
	require.Eventually(t, func() bool {
		r = Run(ctx, s.deps(t), Options{Only: []string{GroupContainers, GroupMetrics}})
		return r.OK
	}, time.Minute, time.Second, "containers and metrics never all passed: %+v", r.Checks)

	r = Run(ctx, s.deps(t), Options{})
	want := map[string]Status{
		"host.gpus": Pass, "host.plumbing": Skip,
		"gpu.visible": Skip, "gpu.ray": Pass,
		"ray.nodes": Pass, "ray.auth": Pass,
		"minio.bucket": Pass, "minio.credentials": Pass, "minio.lab-user": Pass, "minio.private": Pass,
		"data.food11":        Pass,
		"metrics.prometheus": Pass, "metrics.grafana": Pass, "metrics.ray": Pass,
		"jupyter.api": Pass, "jupyter.ray-address": Pass,
		// The stand-in head keeps no job history and no other exercise ran.
		"exercises.submit": Fail, "exercises.infeasible": Fail, "exercises.multi": Fail,
		"exercises.fractional": Fail, "exercises.fault": Fail, "exercises.tune": Fail,
	}
	for _, svc := range []string{"ray-head", "ray-worker-0", "ray-worker-1", "minio", "prometheus", "grafana", "jupyter"} {
		want["containers."+svc] = Pass
	}
	got := map[string]Status{}
	for _, c := range r.Checks {
		got[c.ID] = c.Status
		if want[c.ID] != c.Status {
			t.Errorf("%s: %s, want %s: %s (fix: %s)", c.ID, c.Status, want[c.ID], c.Evidence, c.Fix)
		}
	}
	assert.Len(t, got, len(want))
	assert.False(t, r.OK)
	assert.Equal(t, labplan.ModeCPU, r.Mode)
	assert.Contains(t, find(t, r, "host.gpus").Evidence, "mode rehearsal (CPU only), 2 workers")
	assert.Contains(t, find(t, r, "ray.auth").Evidence, "no token -> 401 (Unauthorized: Missing authentication token); wrong token -> 403")
	assert.Contains(t, find(t, r, "minio.credentials").Evidence, "minioadmin/minioadmin refused (InvalidAccessKeyId)")
	assert.Contains(t, find(t, r, "minio.lab-user").Evidence, "is refused outside it and its policy (AccessDenied)", "the real MinIO refuses the lab user")
	assert.Contains(t, find(t, r, "minio.private").Evidence, "anonymous list and read refused (AccessDenied)", "the real MinIO refuses anonymous requests")
	assert.Contains(t, find(t, r, "metrics.grafana").Evidence, "folder Ray holds 1 dashboards (Default Dashboard)")
	assert.Contains(t, find(t, r, "metrics.prometheus").Evidence, "3 Ray targets; every alive node is scraped and up")
	assert.Contains(t, find(t, r, "data.food11").Evidence, "16643 images")
	assert.Contains(t, find(t, r, "exercises.submit").Evidence, "job mltrain-submit-1 (recorded by exercise submit) is not in Ray's job history")
	assert.Equal(t, "mltrain lab tune", find(t, r, "exercises.tune").Fix)
	assert.Contains(t, find(t, r, "jupyter.ray-address").Evidence, "RAY_ADDRESS=http://ray-head:8265")

	// The full count reads the volume: a manifest without images fails it.
	r = Run(ctx, s.deps(t), Options{Only: []string{GroupData}, DataFull: true})
	require.Len(t, r.Checks, 1)
	assert.Equal(t, Fail, r.Checks[0].Status)
	assert.Contains(t, r.Checks[0].Evidence, "counts differ from the manifest")
	assert.Contains(t, r.Checks[0].Fix, "mltrain data food11 --force")
	leftovers, err := s.eng.ContainerList(ctx, map[string]string{food11.LabelHelperVolume: s.project + "-food11"})
	require.NoError(t, err)
	assert.Empty(t, leftovers, "the dataset helper container is removed")

	// GPU listing through exec in each worker: pretend the plan gave the
	// workers the GPUs the stand-ins print.
	d := s.deps(t)
	pretendNVIDIA(&d)
	r = Run(ctx, d, Options{Only: []string{GroupGPU}})
	gv := find(t, r, "gpu.visible")
	assert.Equal(t, Pass, gv.Status, gv.Evidence)
	assert.Contains(t, gv.Evidence, "ray-worker-0 sees "+standinUUID0+" only; ray-worker-1 sees "+standinUUID1+" only")
	d.State.Plan.Workers[1].GPU = &gpu.GPU{Vendor: gpu.NVIDIA, UUID: standinUUID0} // pretendNVIDIA copied the workers
	r = Run(ctx, d, Options{Only: []string{GroupGPU}})
	gv = find(t, r, "gpu.visible")
	assert.Equal(t, Fail, gv.Status)
	assert.Contains(t, gv.Evidence, "ray-worker-1 sees "+standinUUID1+", but was given "+standinUUID0)

	// A stopped worker: its container row and Ray's node check fail at once,
	// each with the command that brings it back; the stop's SIGTERM made its
	// raylet unregister, so Ray lists no ALIVE node for it (a crashed
	// raylet's stale ALIVE node is verify_test.go's case).
	name, err := lifecycle.StopWorker(ctx, s.eng, s.project, 1)
	require.NoError(t, err)
	r = Run(ctx, s.deps(t), Options{Only: []string{GroupContainers, GroupRay, GroupGPU}})
	c := find(t, r, "containers.ray-worker-1")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Evidence, "container "+name+" is exited")
	assert.Contains(t, c.Fix, "mltrain worker start 1")
	n := find(t, r, "ray.nodes")
	assert.Equal(t, Fail, n.Status, n.Evidence)
	assert.Contains(t, n.Evidence, "ray-worker-1: container exited")
	assert.Contains(t, n.Evidence, "Ray lists no ALIVE node for it", "the stand-in head, like Ray, took the raylet's unregister")
	assert.Equal(t, "mltrain worker start 1", n.Fix)
	g := find(t, r, "gpu.ray")
	assert.NotContains(t, g.Evidence, "ray-worker-1 (", "a stopped worker's node is no GPU worker")
}

// pretendNVIDIA makes d verify the stand-in lab as a 2-GPU NVIDIA lab: the
// plan gives each worker the GPU its stand-in prints for nvidia-smi (reached
// through the stand-in binary, /app).
func pretendNVIDIA(d *Deps) {
	d.GPUListCommand = map[gpu.Vendor][]string{gpu.NVIDIA: append([]string{"/app"}, DefaultGPUListCommand[gpu.NVIDIA]...)}
	plan := d.State.Plan
	plan.Mode, plan.Vendor = labplan.ModeStandard, gpu.NVIDIA
	plan.Workers = append([]labplan.Worker(nil), plan.Workers...)
	plan.Workers[0].GPU = &gpu.GPU{Vendor: gpu.NVIDIA, UUID: standinUUID0}
	plan.Workers[1].GPU = &gpu.GPU{Vendor: gpu.NVIDIA, UUID: standinUUID1, Index: 1}
	d.State.Plan = plan
}
