package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

func checkNamed(t *testing.T, res doctor.Result, name string) doctor.Check {
	t.Helper()
	for _, c := range res.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, res.Checks)
	return doctor.Check{}
}

// Against this machine's engine with an NVIDIA fixture host: the engine row
// passes, the missing NVIDIA runtime fails with its fix, and the exit code is 1.
func TestDoctorJSONRealEngineNVIDIAFixture(t *testing.T) {
	dockertest.Engine(t) // skip only where no engine exists; CI requires one
	t.Setenv(gpu.RootEnv, fixtures+"nvidia-driver")
	out, errOut, code := run(t, "doctor", "--json", "--host-ip", "192.0.2.4")
	assert.Equal(t, 1, code)
	assert.Empty(t, errOut)
	var res doctor.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.False(t, res.OK)
	assert.Equal(t, doctor.Pass, checkNamed(t, res, "docker").Status)
	rt := checkNamed(t, res, "nvidia runtime")
	assert.Equal(t, doctor.Fail, rt.Status)
	assert.Equal(t, doctor.FixNVIDIARuntime, rt.Fix)
	assert.Contains(t, checkNamed(t, res, "address").Detail, "192.0.2.4")
}

func TestDoctorHumanUnreachableEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv(gpu.RootEnv, fixtures+"none")
	out, _, code := run(t, "doctor", "--host-ip", "192.0.2.4")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `FAIL\s+docker\s+docker engine at unix:///nonexistent/docker.sock is not reachable`, out)
	assert.Contains(t, out, "fix: DOCKER_HOST=unix:///nonexistent/docker.sock points mltrain at that engine: start it or fix DOCKER_HOST, or 'unset DOCKER_HOST' to use this host's Docker", "the hint names what pointed at the dead engine")
	assert.Regexp(t, `WARN\s+gpus\s+no GPU hardware`, out)
	assert.Contains(t, out, "failed: not ready")
}

// doctor compares the driver with the need the dockerfiles package owns:
// the fixture's amdgpu-dkms 6.12.12 passes against ROCm 7.0.1, a 6.7.0 one
// fails with the fix and exit code 1.
func TestDoctorDriverRowUsesTheImagesNeed(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock") // the engine row fails; this test reads the driver row
	t.Setenv(gpu.RootEnv, fixtures+"mi100x2")
	out, _, code := run(t, "doctor", "--json", "--host-ip", "192.0.2.4")
	assert.Equal(t, 1, code)
	var res doctor.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	c := checkNamed(t, res, "amdgpu driver")
	assert.Equal(t, doctor.Pass, c.Status)
	assert.Equal(t, "amdgpu driver 6.12.12; the ROCm worker image carries ROCm "+dockerfiles.ROCm+": amdgpu driver "+
		dockerfiles.ROCmMinDriverRelease+" or newer (module version "+dockerfiles.ROCmMinAMDGPUModule+")", c.Detail)

	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(fixtures+"mi100x2")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/module/amdgpu/version"), []byte("6.7.0\n"), 0o644))
	t.Setenv(gpu.RootEnv, root)
	out, _, code = run(t, "doctor", "--host-ip", "192.0.2.4")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `FAIL\s+amdgpu driver\s+amdgpu driver 6.7.0 is too old: the ROCm worker image carries ROCm 7.0.1`, out)
	assert.Contains(t, out, "fix: install AMD's amdgpu driver for ROCm 7.0.1 (wget https://repo.radeon.com/amdgpu-install/7.0.1/")
}

// The fix column names commands on the lab doctor was asked about.
func TestDoctorFixCarriesTheLabsFlags(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv(gpu.RootEnv, fixtures+"mi100x1")
	dir := t.TempDir()
	out, _, code := run(t, "doctor", "--project", "lab2", "--state-dir", dir, "--host-ip", "192.0.2.4")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "fix: run 'mltrain --project lab2 --state-dir "+dir+" up --share-gpu' to let two workers share this GPU", out)
	out, _, _ = run(t, "doctor", "--json", "--project", "lab2", "--host-ip", "192.0.2.4")
	var res doctor.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "run 'mltrain --project lab2 up --share-gpu' to let two workers share this GPU", checkNamed(t, res, "gpus").Fix)
}

// doctor looks at where the lab's images come from: a lab whose MinIO image
// is on a registry this host cannot resolve gets a warning naming it, with
// both ways to have the image, on this lab.
func TestDoctorWarnsWhenTheLabsImagesCannotBePulled(t *testing.T) {
	dockertest.Engine(t)
	t.Setenv(gpu.RootEnv, fixtures+"none")
	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	pl, err := plan.New(labtest.RehearsalFacts(), plan.Options{Project: "dimg",
		Images: map[service.Role]string{service.RoleMinIO: "registry.invalid/minio:1"}}, creds)
	require.NoError(t, err)
	require.NoError(t, dir.SaveState(state.State{Project: "dimg", Plan: pl}))

	out, errOut, code := run(t, "doctor", "--json", "--project", "dimg", "--state-dir", dir.Path(), "--host-ip", "192.0.2.4")
	assert.Empty(t, errOut)
	var res doctor.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	c := checkNamed(t, res, "images")
	assert.Equal(t, doctor.Warn, c.Status, c.Detail)
	assert.Regexp(t, `registry\.invalid \(cannot resolve its name: [a-z ]+; for registry\.invalid/minio:1\)`, c.Detail)
	assert.Contains(t, c.Fix, "'mltrain --project dimg --state-dir "+dir.Path()+" images load FILE'")
	assert.Contains(t, c.Fix, "--image-minio")
	assert.Equal(t, 0, code, "a warning, not a failure: %s", out)

	// The human table says the verdict is not the whole story.
	out, _, _ = run(t, "doctor", "--project", "dimg", "--state-dir", dir.Path(), "--host-ip", "192.0.2.4")
	assert.Regexp(t, `WARN\s+images\s+`, out)
	assert.Contains(t, out, "ready, but read the WARN rows")
}
