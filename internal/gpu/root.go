package gpu

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mltrain/mltrain/internal/clierr"
)

// RootEnv names the variable that points detection at a fixture host.
//
// Its value stands for the filesystem root "/": sysfs is read from
// $MLTRAIN_SYSFS_ROOT/sys/..., and the other host files detection and doctor
// look at follow the same prefix ($ROOT/dev/kfd, $ROOT/dev/dri/renderD*,
// $ROOT/etc/group, $ROOT/proc/net/route), so one variable describes a whole
// fixture host and real and fake files never mix. Reported paths (render
// nodes) stay the real /dev paths containers will get. Under a fixture root
// NVML is not consulted: a fixture cannot hold a driver library.
const RootEnv = "MLTRAIN_SYSFS_ROOT"

// ResolveRoot returns the root to read host files under: root when given,
// else $MLTRAIN_SYSFS_ROOT, else "/". A root that is set but missing is an
// error naming it, so a typo never silently reads the real host.
func ResolveRoot(root string) (string, error) {
	what := "sysfs root"
	if root == "" {
		root = os.Getenv(RootEnv)
		what = RootEnv
	}
	if root == "" || root == "/" {
		return "/", nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", clierr.WithHint(fmt.Errorf("%s=%s: %w", what, root, err),
			"unset "+RootEnv+" to read this host, or point it at a fixture tree that holds sys/")
	}
	if !fi.IsDir() {
		return "", clierr.Hintf("unset "+RootEnv+" to read this host, or point it at a fixture tree that holds sys/",
			"%s=%s is not a directory", what, root)
	}
	return filepath.Clean(root), nil
}

// under joins a host path such as /sys/bus/pci/devices onto root.
func under(root, hostPath string) string {
	if root == "" || root == "/" {
		return hostPath
	}
	return filepath.Join(root, hostPath)
}

// HostPath maps a host path (e.g. /dev/kfd) under an already resolved root.
func HostPath(root, hostPath string) string { return under(root, hostPath) }
