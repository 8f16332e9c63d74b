package doctor

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/ports"
)

// System returns the real Deps. connect opens the engine (the CLI passes its
// own, which honours DOCKER_HOST and docker contexts); h carries --host-ip
// and the root (fixture hosts: devices are checked under it too).
func System(connect func(ctx context.Context) (docker.Engine, error), h host.Options) Deps {
	return Deps{
		Connect: connect,
		DetectGPUs: func(ctx context.Context) (gpu.Report, error) {
			return gpu.Detect(ctx, gpu.Options{Root: h.Root, NVML: h.NVML})
		},
		HostIP: func(ctx context.Context) (string, string, error) {
			return host.FindHostIP(ctx, h)
		},
		PortFree: PortFree,
		DiskFree: DiskFree,
		Access: func(dev string) error {
			root, err := gpu.ResolveRoot(h.Root)
			if err != nil {
				return err
			}
			return Access(gpu.HostPath(root, dev))
		},
		Groups: func() (int, int) {
			root, err := gpu.ResolveRoot(h.Root)
			if err != nil {
				return 0, 0
			}
			return host.GroupIDs(root)
		},
		DialRegistry: DialRegistry,
	}
}

// PortFree binds the TCP port on every address and lets it go (ports.Free,
// the check up makes too).
func PortFree(port int) error { return ports.Free("", port) }

// DiskFree is the space available to unprivileged users in path's filesystem.
func DiskFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Access checks read and write permission without opening the device
// (opening /dev/kfd creates a compute context).
func Access(path string) error {
	if err := unix.Access(path, unix.R_OK|unix.W_OK); err != nil {
		return &pathError{path: path, err: err}
	}
	return nil
}

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
