package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/gpu"
)

const fixtures = "../../internal/gpu/testdata/"

func TestGpusJSONFromFixture(t *testing.T) {
	t.Setenv(gpu.RootEnv, fixtures+"mi100x2")
	out, _, code := run(t, "gpus", "--json")
	require.Equal(t, 0, code)
	var rep gpu.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.GPUs, 2)
	assert.Equal(t, "/dev/dri/renderD129", rep.GPUs[1].RenderNode)
	assert.Contains(t, out, `"problems": []`, "problems is [] not null")
	assert.Contains(t, out, `"amdgpu_driver_version": "6.12.12"`)
	assert.NotContains(t, out, "nvidia_driver_version", "unknown versions are left out")
}

func TestGpusHumanShowsProblemsAndExitsZero(t *testing.T) {
	t.Setenv(gpu.RootEnv, fixtures+"nvidia-nodriver")
	out, _, code := run(t, "gpus")
	assert.Equal(t, 0, code, "problems are data: detection ran")
	assert.Contains(t, out, "No usable GPUs.")
	assert.Contains(t, out, "driver-missing: NVIDIA GPU hardware without the nvidia kernel driver")
	assert.Contains(t, out, "fix: install and load the NVIDIA driver")

	t.Setenv(gpu.RootEnv, fixtures+"mi100x1")
	out, _, code = run(t, "gpus")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `0\s+amd\s+Instinct MI100 \(FRU\)\s+32752 MiB\s+0000:43:00.0\s+GPU-3930312f94501209\s+/dev/dri/renderD128`, out)
	assert.Contains(t, out, "\namdgpu driver (version unknown)\n", "the in-tree amdgpu has no version file")
	assert.NotContains(t, out, "Problems:")

	t.Setenv(gpu.RootEnv, fixtures+"mi100x2")
	out, _, code = run(t, "gpus")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "\namdgpu driver 6.12.12\n")
	assert.NotContains(t, out, "NVIDIA driver")
}

func TestGpusMissingRootFails(t *testing.T) {
	t.Setenv(gpu.RootEnv, "/no/such/fixture")
	_, _, code := run(t, "gpus")
	assert.Equal(t, 1, code)
}
