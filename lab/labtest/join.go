package labtest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// NodeIP is this machine's address other hosts would use (its default-route
// interface's); the test fails where there is none.
func NodeIP(t testing.TB) string {
	t.Helper()
	ip, err := host.FindNodeIP(host.Options{})
	if err != nil || ip == "" {
		t.Fatalf("this machine has no default-route address for a lab that spans hosts: %v", err)
	}
	return ip
}

// JoinableOptions are LabOptions for a lab that accepts other hosts: Ray on
// this machine's network at nodeIP, its ports free.
func JoinableOptions(t testing.TB, eng docker.Engine, prefix, nodeIP string, workers int) plan.Options {
	t.Helper()
	o := LabOptions(t, eng, prefix)
	o.AllowJoin, o.Bind, o.Workers = true, nodeIP, workers
	o.Ports[service.PortGCS] = portstest.FreePorts(t, 1)[0]
	o.RayPortBase = FreeRayPortBase(t, workers+1)
	return o
}

// SecondHost is a network namespace standing for another host: a container
// on a Docker network of its own, which reaches the first host only through
// the first host's address (never the lab's Docker network). A join's
// workers run in it through an override: network_mode "container:NAME".
type SecondHost struct {
	Name string // the holder container
	IP   string // the "host's" address
	Net  string // its Docker network
}

// RouteFrom lets the first host's container reach this host's address, as
// two hosts route to each other (a container's traffic leaves through its
// host): Docker keeps its bridge networks apart, so the container joins
// this host's network for the test.
func (h SecondHost) RouteFrom(t testing.TB, container string) {
	t.Helper()
	if out, err := exec.Command("docker", "network", "connect", h.Net, container).CombinedOutput(); err != nil {
		t.Fatalf("docker network connect %s %s: %v\n%s", h.Net, container, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "network", "disconnect", "-f", h.Net, container).Run() })
}

// NewSecondHost starts the holder; it and its network are removed at the end.
func NewSecondHost(t testing.TB, eng docker.Engine, prefix string) SecondHost {
	t.Helper()
	ctx := context.Background()
	name := dockertest.UniqueName(t, prefix)
	net := name + "-net"
	if _, err := eng.NetworkEnsure(ctx, net, map[string]string{dockertest.TestLabel: "1"}); err != nil {
		t.Fatal(err)
	}
	img := dockertest.SleeperImage(t, eng)
	_, err := eng.ContainerCreate(ctx, docker.ContainerSpec{Name: name,
		Config:     &container.Config{Image: img, Labels: map[string]string{dockertest.TestLabel: "1"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(net)},
		Networking: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{net: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = eng.ContainerRemove(context.Background(), name, true)
		_ = eng.NetworkRemove(context.Background(), net)
	})
	if err := eng.ContainerStart(ctx, name); err != nil {
		t.Fatal(err)
	}
	d, err := eng.ContainerInspect(ctx, name)
	if err != nil || d.Networks[net] == "" {
		t.Fatalf("the second host's holder has no address: %v", err)
	}
	return SecondHost{Name: name, IP: d.Networks[net], Net: net}
}
