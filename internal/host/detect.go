package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
)

// DefaultMetadataURL is where the course's scripts read the node's public
// address (EC2-style metadata, served by OpenStack on Chameleon too).
const DefaultMetadataURL = "http://169.254.169.254/latest/meta-data/public-ipv4"

// Where HostIP came from.
const (
	SourceFlag         = "flag"
	SourceMetadata     = "metadata"
	SourceDefaultRoute = "default-route"
	SourceLoopback     = "loopback"
)

// Options tunes Detect and FindHostIP. The zero value reads this host.
type Options struct {
	// HostIP overrides address detection (the --host-ip flag).
	HostIP string
	// NodeIP overrides the address other hosts use (the --node-ip flag).
	NodeIP string
	// Root stands for "/" of the host ("" = $MLTRAIN_SYSFS_ROOT, else "/"); see gpu.RootEnv.
	// sysfs, /etc/group, /dev/kfd and /proc/net/route are read under it.
	Root string
	// NVML replaces the system NVML library (tests).
	NVML gpu.NVML
	// MetadataURL replaces DefaultMetadataURL; "-" skips the metadata query.
	MetadataURL string
	// MetadataTimeout bounds the metadata query (default 1 s, as the course's curl).
	MetadataTimeout time.Duration
	// InterfaceAddrs replaces the lookup of an interface's addresses (tests).
	InterfaceAddrs func(iface string) ([]net.Addr, error)
}

// Detect gathers the facts the lab is planned from: the GPU report, CPUs,
// memory, the render/video group ids and the address browsers will use.
// It fails only on a missing root or an invalid --host-ip; GPU trouble is in
// Facts.GPUs.Problems. CPUs and memory are always this machine's, even under
// a fixture root (they come from the kernel, not from files).
func Detect(ctx context.Context, opts Options) (Facts, error) {
	root, err := gpu.ResolveRoot(opts.Root)
	if err != nil {
		return Facts{}, err
	}
	opts.Root = root
	rep, err := gpu.Detect(ctx, gpu.Options{Root: root, NVML: opts.NVML})
	if err != nil {
		return Facts{}, err
	}
	f := Facts{GPUs: rep, CPUs: runtime.NumCPU(), MemoryBytes: memoryBytes()}
	f.RenderGID, f.VideoGID = GroupIDs(root)
	f.HostIP, f.HostIPSource, err = FindHostIP(ctx, opts)
	if err != nil {
		return Facts{}, err
	}
	if f.NodeIP, err = FindNodeIP(opts); err != nil {
		return Facts{}, err
	}
	return f, nil
}

func memoryBytes() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// GroupIDs returns the numeric ids of the render and video groups from
// root's /etc/group (0 when absent). Without a render group, the group that
// owns /dev/kfd stands in, since that is what containers need to open it.
func GroupIDs(root string) (render, video int) {
	if b, err := os.ReadFile(gpu.HostPath(root, "/etc/group")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.Split(line, ":")
			if len(parts) < 3 {
				continue
			}
			gid, err := strconv.Atoi(parts[2])
			if err != nil {
				continue
			}
			switch parts[0] {
			case "render":
				render = gid
			case "video":
				video = gid
			}
		}
	}
	if render == 0 {
		if fi, err := os.Stat(gpu.HostPath(root, "/dev/kfd")); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				render = int(st.Gid)
			}
		}
	}
	return render, video
}

// FindHostIP picks the address students' browsers will use, like the course
// does: --host-ip, else the cloud metadata's public IPv4 (1 s timeout), else
// the address of the default-route interface, else 127.0.0.1 (source
// "loopback", which doctor flags). Only an invalid --host-ip is an error.
func FindHostIP(ctx context.Context, opts Options) (ip, source string, err error) {
	if opts.HostIP != "" {
		p := net.ParseIP(opts.HostIP)
		if p == nil {
			return "", "", clierr.Hintf("pass the address browsers should use, e.g. --host-ip 192.0.2.10",
				"--host-ip %q is not an IP address", opts.HostIP)
		}
		return p.String(), SourceFlag, nil
	}
	if ip := metadataIP(ctx, opts); ip != "" {
		return ip, SourceMetadata, nil
	}
	root, rerr := gpu.ResolveRoot(opts.Root)
	if rerr != nil {
		return "", "", rerr
	}
	if ip := defaultRouteIP(root, opts.InterfaceAddrs); ip != "" {
		return ip, SourceDefaultRoute, nil
	}
	return "127.0.0.1", SourceLoopback, nil
}

// FindNodeIP is the address this host's Ray nodes advertise to other hosts:
// --node-ip (which must be an address of this host, checked by the caller
// that binds it), else the default-route interface's IPv4, else "".
func FindNodeIP(opts Options) (string, error) {
	if opts.NodeIP != "" {
		p := net.ParseIP(opts.NodeIP)
		if p == nil || p.To4() == nil || p.IsUnspecified() || p.IsLoopback() {
			return "", clierr.Hintf("pass an IPv4 address of this host that the other host can reach, e.g. --node-ip 10.52.0.7 ('ip -4 addr' lists them)",
				"--node-ip %q is not an IPv4 address other hosts can reach", opts.NodeIP)
		}
		return p.String(), nil
	}
	root, err := gpu.ResolveRoot(opts.Root)
	if err != nil {
		return "", err
	}
	return defaultRouteIP(root, opts.InterfaceAddrs), nil
}

// metadataIP asks the metadata service; any failure (no service off-cloud,
// 404 without a floating IP, garbage) means "not from here".
func metadataIP(ctx context.Context, opts Options) string {
	url := opts.MetadataURL
	if url == "-" {
		return ""
	}
	if url == "" {
		url = DefaultMetadataURL
	}
	timeout := opts.MetadataTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	// No proxy: the metadata address is link-local, a proxy cannot reach it.
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: timeout}
	resp, err := c.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return ""
	}
	p := net.ParseIP(strings.TrimSpace(string(b)))
	if p == nil || p.To4() == nil || p.IsUnspecified() {
		return ""
	}
	return p.String()
}

// DefaultRouteInterface returns the interface of the default IPv4 route with
// the lowest metric from a /proc/net/route file.
func DefaultRouteInterface(routeFile string) (string, error) {
	f, err := os.Open(routeFile)
	if err != nil {
		return "", err
	}
	defer f.Close()
	best, bestMetric := "", -1
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		fl := strings.Fields(sc.Text())
		if len(fl) < 8 {
			continue
		}
		flags, err := strconv.ParseUint(fl[3], 16, 32)
		if err != nil || flags&0x1 == 0 { // RTF_UP
			continue
		}
		metric, err := strconv.Atoi(fl[6])
		if err != nil || fl[1] != "00000000" || fl[7] != "00000000" {
			continue
		}
		if bestMetric < 0 || metric < bestMetric {
			best, bestMetric = fl[0], metric
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", routeFile, err)
	}
	if best == "" {
		return "", fmt.Errorf("%s: no default route", routeFile)
	}
	return best, nil
}

func defaultRouteIP(root string, addrsOf func(string) ([]net.Addr, error)) string {
	iface, err := DefaultRouteInterface(gpu.HostPath(root, "/proc/net/route"))
	if err != nil {
		return ""
	}
	if addrsOf == nil {
		addrsOf = func(name string) ([]net.Addr, error) {
			i, err := net.InterfaceByName(name)
			if err != nil {
				return nil, err
			}
			return i.Addrs()
		}
	}
	addrs, err := addrsOf(iface)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if ip4 := ip.To4(); ip4 != nil && ip4.IsGlobalUnicast() {
			return ip4.String()
		}
	}
	return ""
}
