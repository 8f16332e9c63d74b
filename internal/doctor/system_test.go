package doctor

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/host"
)

func TestPortFree(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.Error(t, PortFree(port), "a port with a listener is taken")
	require.NoError(t, l.Close())
	assert.NoError(t, PortFree(port))
}

func TestDiskFree(t *testing.T) {
	free, err := DiskFree(t.TempDir())
	require.NoError(t, err)
	assert.Positive(t, free)
	_, err = DiskFree("/no/such/dir")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/no/such/dir")
}

func TestAccess(t *testing.T) {
	f := filepath.Join(t.TempDir(), "kfd")
	require.NoError(t, os.WriteFile(f, nil, 0o660))
	assert.NoError(t, Access(f))
	err := Access(f + "-missing")
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "kfd-missing")
}

// System reads devices under a fixture root, as gpu detection does.
func TestSystemUnderFixtureRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("../gpu/testdata/mi100x2")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev/dri"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/group"), []byte("video:x:44:\nrender:x:109:\n"), 0o644))
	for _, d := range []string{"dev/kfd", "dev/dri/renderD128"} { // renderD129 missing
		require.NoError(t, os.WriteFile(filepath.Join(root, d), nil, 0o660))
	}
	d := System(func(context.Context) (docker.Engine, error) { return newHealthy().eng, nil },
		host.Options{Root: root, HostIP: "192.0.2.1"})
	d.PortFree = func(int) error { return nil } // the lab's real ports are not this test's business
	r := Run(context.Background(), d, Options{Driver: need})
	assert.Equal(t, "2 amd GPUs: 2x AMD Instinct MI100", row(t, r, "gpus").Detail)
	assert.Equal(t, Pass, row(t, r, "amdgpu driver").Status)
	assert.Contains(t, row(t, r, "amdgpu driver").Detail, "amdgpu driver 6.12.12;", "read from the fixture's /sys/module/amdgpu/version")
	assert.Contains(t, row(t, r, "render group").Detail, "render gid 109, video gid 44")
	assert.Equal(t, Pass, row(t, r, "/dev/kfd").Status)
	assert.Equal(t, Pass, row(t, r, "/dev/dri/renderD128").Status)
	c := row(t, r, "/dev/dri/renderD129")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "does not exist")
	assert.Contains(t, row(t, r, "address").Detail, "192.0.2.1 (from --host-ip)")
	assert.False(t, r.OK)

	// An old amdgpu-dkms on the same host fails the row.
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys/module/amdgpu/version"), []byte("6.7.0\n"), 0o644))
	c = row(t, Run(context.Background(), d, Options{Driver: need}), "amdgpu driver")
	assert.Equal(t, Fail, c.Status)
	assert.Contains(t, c.Detail, "amdgpu driver 6.7.0 is too old")
}
