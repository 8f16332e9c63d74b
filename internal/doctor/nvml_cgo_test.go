//go:build cgo

package doctor

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
)

// Doctor on a DGX A100 as go-nvml's mock models it, through real detection:
// the driver NVML reports decides the "nvidia driver" row.
func TestDriverRowFromTheNVMLMock(t *testing.T) {
	run := func(driver string, cuda int, r nvml.Return) Check {
		t.Helper()
		srv := dgxa100.New()
		srv.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return driver, r }
		srv.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return cuda, r }
		d := System(func(context.Context) (docker.Engine, error) { return newHealthy().eng, nil },
			host.Options{Root: "../gpu/testdata/none", HostIP: "192.0.2.1", NVML: gpuFromMock(srv)})
		d.PortFree = func(int) error { return nil }
		res := Run(context.Background(), d, Options{Driver: need})
		require.Contains(t, row(t, res, "gpus").Detail, "8 nvidia GPUs")
		return row(t, res, "nvidia driver")
	}

	c := run("570.133.20", 12080, nvml.SUCCESS)
	assert.Equal(t, Pass, c.Status)
	assert.Contains(t, c.Detail, "NVIDIA driver 570.133.20 (CUDA 12.8)")

	c = run("515.65.01", 11070, nvml.SUCCESS)
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "NVIDIA driver 515.65.01 (CUDA 11.7) is too old")
	assert.Contains(t, c.Fix, "nvidia-driver-570-server")

	c = run("550.54.15", 12040, nvml.SUCCESS) // the mock's own driver
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "minor-version compatibility")

	c = run("", 0, nvml.ERROR_NOT_SUPPORTED)
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "NVIDIA driver not checked")
}

func gpuFromMock(srv *dgxa100.Server) gpu.NVML { return gpu.FromNVML(&srv.Interface) }
