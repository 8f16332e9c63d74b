package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
)

const routeHeader = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func fakeAddrs(m map[string]string) func(string) ([]net.Addr, error) {
	return func(name string) ([]net.Addr, error) {
		s, ok := m[name]
		if !ok {
			return nil, fmt.Errorf("no interface %s", name)
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, err
		}
		ip, _, _ := net.ParseCIDR(s)
		return []net.Addr{&net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)}, &net.IPNet{IP: ip, Mask: n.Mask}}, nil
	}
}

func TestDefaultRouteInterfacePicksLowestMetric(t *testing.T) {
	f := filepath.Join(t.TempDir(), "route")
	writeFile(t, f, routeHeader+
		"docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"+
		"wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"+
		"down0\t00000000\t0101A8C0\t0002\t0\t0\t1\t00000000\t0\t0\t0\n"+ // not RTF_UP
		"eno1\t00000000\t010A0A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")
	iface, err := DefaultRouteInterface(f)
	require.NoError(t, err)
	assert.Equal(t, "eno1", iface)

	writeFile(t, f, routeHeader+"docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n")
	_, err = DefaultRouteInterface(f)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no default route")
}

func TestFindHostIPOrder(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "proc/net/route"), routeHeader+"eno1\t00000000\t010A0A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")
	addrs := fakeAddrs(map[string]string{"eno1": "10.10.10.5/24"})
	ctx := context.Background()

	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/latest/meta-data/public-ipv4", r.URL.Path)
		fmt.Fprint(w, "129.114.27.3\n")
	}))
	defer meta.Close()
	ip, src, err := FindHostIP(ctx, Options{Root: root, MetadataURL: meta.URL + "/latest/meta-data/public-ipv4", InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "129.114.27.3", ip)
	assert.Equal(t, SourceMetadata, src)

	// The flag wins over everything.
	ip, src, err = FindHostIP(ctx, Options{HostIP: "192.0.2.7", Root: root, MetadataURL: meta.URL, InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.7", ip)
	assert.Equal(t, SourceFlag, src)

	// No floating IP: metadata answers 404 -> the default-route interface.
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	ip, src, err = FindHostIP(ctx, Options{Root: root, MetadataURL: notFound.URL, InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "10.10.10.5", ip)
	assert.Equal(t, SourceDefaultRoute, src)

	// Garbage from metadata is not an address.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>hi</html>") }))
	defer garbage.Close()
	_, src, _ = FindHostIP(ctx, Options{Root: root, MetadataURL: garbage.URL, InterfaceAddrs: addrs})
	assert.Equal(t, SourceDefaultRoute, src)

	// A metadata service that hangs is abandoned after the timeout.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "203.0.113.9")
	}))
	defer slow.Close()
	defer close(release)
	ip, src, err = FindHostIP(ctx, Options{Root: root, MetadataURL: slow.URL, MetadataTimeout: 50 * time.Millisecond, InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "10.10.10.5", ip)
	assert.Equal(t, SourceDefaultRoute, src)

	// Nothing at all: loopback, flagged by its source.
	ip, src, err = FindHostIP(ctx, Options{Root: t.TempDir(), MetadataURL: "-"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", ip)
	assert.Equal(t, SourceLoopback, src)
}

func TestFindHostIPRejectsBadFlag(t *testing.T) {
	_, _, err := FindHostIP(context.Background(), Options{HostIP: "my.host"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--host-ip "my.host"`)
	assert.Contains(t, clierr.Hint(err), "--host-ip")
}

func TestGroupIDs(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "etc/group"), "root:x:0:\nvideo:x:44:alice\nbroken line\nrender:x:993:alice,bob\n")
	r, v := GroupIDs(root)
	assert.Equal(t, 993, r)
	assert.Equal(t, 44, v)

	// No render group: the group owning /dev/kfd stands in.
	root = t.TempDir()
	writeFile(t, filepath.Join(root, "etc/group"), "video:x:44:\n")
	writeFile(t, filepath.Join(root, "dev/kfd"), "")
	require.NoError(t, os.Chown(filepath.Join(root, "dev/kfd"), -1, 4242))
	r, v = GroupIDs(root)
	assert.Equal(t, 4242, r)
	assert.Equal(t, 44, v)
}

func TestDetectFixtureHost(t *testing.T) {
	root := t.TempDir()
	// A fixture host: the 2xMI100 sysfs plus groups and a route.
	require.NoError(t, os.CopyFS(root, os.DirFS("../gpu/testdata/mi100x2")))
	writeFile(t, filepath.Join(root, "etc/group"), "video:x:44:\nrender:x:109:\n")
	writeFile(t, filepath.Join(root, "proc/net/route"), routeHeader+"eno1\t00000000\t010A0A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")
	f, err := Detect(context.Background(), Options{Root: root, MetadataURL: "-", InterfaceAddrs: fakeAddrs(map[string]string{"eno1": "10.52.0.8/22"})})
	require.NoError(t, err)
	require.Len(t, f.GPUs.GPUs, 2)
	assert.Equal(t, gpu.AMD, f.GPUs.Vendor())
	assert.Equal(t, 109, f.RenderGID)
	assert.Equal(t, 44, f.VideoGID)
	assert.Equal(t, "10.52.0.8", f.HostIP)
	assert.Equal(t, SourceDefaultRoute, f.HostIPSource)
	assert.Positive(t, f.CPUs)
	assert.Greater(t, f.MemoryBytes, int64(64<<20))
}

func TestDetectErrors(t *testing.T) {
	_, err := Detect(context.Background(), Options{Root: "/no/such/root"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/no/such/root")

	_, err = Detect(context.Background(), Options{Root: "../gpu/testdata/none", HostIP: "nope"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--host-ip")
}

// This machine, for real: the metadata service is absent here, so the
// address comes from the default route when there is one.
func TestDetectThisHost(t *testing.T) {
	f, err := Detect(context.Background(), Options{MetadataURL: "-"})
	require.NoError(t, err)
	require.NotNil(t, net.ParseIP(f.HostIP), f.HostIP)
	if _, rerr := DefaultRouteInterface("/proc/net/route"); rerr == nil {
		assert.Equal(t, SourceDefaultRoute, f.HostIPSource)
		assert.NotEqual(t, "127.0.0.1", f.HostIP)
	} else {
		assert.True(t, errors.Is(rerr, os.ErrNotExist) || f.HostIPSource == SourceLoopback)
	}
	assert.NotNil(t, f.GPUs.Problems)
	assert.Equal(t, int64(0), f.MemoryBytes%4096, "whole pages")
}

// Other hosts reach a node at an address bound on it: the default-route
// interface's, never the cloud metadata's public (NAT'd) address.
func TestFindNodeIP(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "proc/net/route"), routeHeader+"eno1\t00000000\t010A0A0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")
	addrs := fakeAddrs(map[string]string{"eno1": "10.52.0.7/24"})
	ip, err := FindNodeIP(Options{Root: root, InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "10.52.0.7", ip)
	ip, err = FindNodeIP(Options{Root: root, NodeIP: "192.0.2.9", InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.9", ip)
	for _, bad := range []string{"127.0.0.1", "0.0.0.0", "host2", "::1"} {
		_, err = FindNodeIP(Options{Root: root, NodeIP: bad})
		require.Error(t, err, bad)
		assert.Contains(t, clierr.Hint(err), "--node-ip")
	}
	ip, err = FindNodeIP(Options{Root: t.TempDir(), InterfaceAddrs: addrs})
	require.NoError(t, err)
	assert.Empty(t, ip, "no default route: unknown, for the plan to refuse with the fix")
}
