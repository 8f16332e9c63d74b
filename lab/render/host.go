package render

import (
	"fmt"
	"net"
	"strconv"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// Rendering a lab whose Ray nodes span hosts (Network == NetworkHost). Ray's
// nodes run on the host's network: a node must bind the address other hosts
// reach it at, which exists only in the host's namespace (Ray's agents bind
// --node-ip-address), and it advertises that address, never a bridge
// address another host cannot route to. The other services stay on the
// lab's network and reach Ray through the host's address.

func (r renderer) spanHosts(services types.Services) error {
	p := r.p
	probes := plan.ProbeAddrs(p)
	head := services[service.HeadService]
	head.NetworkMode, head.Ports, head.Networks = "host", nil, nil
	head.Command = append(types.ShellCommand{"ray", "start", "--head",
		fmt.Sprintf("--port=%d", p.Ports[service.PortGCS]),
		"--node-ip-address=" + p.NodeIP,
		"--dashboard-host=" + p.DashboardHost(),
		fmt.Sprintf("--dashboard-port=%d", p.Ports[service.PortDashboard]),
		fmt.Sprintf("--num-cpus=%d", p.Head.CPUs),
		"--num-gpus=0",
		r.nodeLabels(service.HeadService)}, append(p.Head.Ports.Flags(), "--block")...)
	r.setEnv(&head,
		"RAY_GRAFANA_HOST", probes.Grafana,
		"RAY_PROMETHEUS_HOST", probes.Prometheus,
		"AWS_ENDPOINT_URL", probes.MinIO,
	)
	services[service.HeadService] = head
	prev := service.HeadService
	for _, w := range p.Workers {
		s := services[w.Service]
		r.hostWorker(&s, w, net.JoinHostPort(p.NodeIP, strconv.Itoa(p.Ports[service.PortGCS])), probes.MinIO)
		r.shareRayTmp(&s, prev)
		services[w.Service] = s
		prev = w.Service
	}
	j := services[service.JupyterService]
	r.setEnv(&j, "RAY_ADDRESS", p.JupyterRayAddress())
	services[service.JupyterService] = j
	return nil
}

// hostWorker puts worker w on the host network, joining the GCS at gcs,
// writing checkpoints to minio.
func (r renderer) hostWorker(s *types.ServiceConfig, w plan.Worker, gcs, minio string) {
	s.NetworkMode, s.Networks = "host", nil
	s.Command = append(types.ShellCommand{"ray", "start",
		"--address=" + gcs,
		"--node-ip-address=" + r.p.NodeIP,
		fmt.Sprintf("--num-cpus=%d", w.CPUs),
		"--num-gpus=1",
		r.nodeLabels(w.Service)}, append(w.Ports.Flags(), "--block")...)
	r.setEnv(s, "AWS_ENDPOINT_URL", minio, service.AgentPortEnv, strconv.Itoa(w.Ports.AgentHTTP), service.NodeIPEnv, r.p.NodeIP)
}

// shareRayTmp gives a node on the host network this host's one Ray temp
// dir (the ray-tmp volume, the head's on the first host), and starts it
// after the node prev ("": none). Why: the nodes of a host share its
// address, and a driver (a job's entrypoint, on the head) finds its raylet
// by address alone: Ray's GetNodeToConnectForDriver hands it the first
// ALIVE node with the driver's IP, which may be any node of this host, and
// the driver then opens that node's Unix sockets. So every node's sockets
// must be where every container of the host sees them. In a shared session
// dir Ray names them apart (raylet, raylet.1, ...; as its own multi-node
// test cluster on one machine does), but it picks a name before the raylet
// binds it, so two nodes starting at once could pick the same: the host's
// nodes start one after another. Root, as the head: the volume is
// root-owned.
func (r renderer) shareRayTmp(s *types.ServiceConfig, prev string) {
	s.User = "0"
	s.Volumes = append(s.Volumes, volume(VolumeRayTmp, rayTmp, false))
	if prev == "" {
		return
	}
	role := service.RoleWorker
	if prev == service.HeadService {
		role = service.RoleHead
	}
	if s.DependsOn == nil {
		s.DependsOn = types.DependsOnConfig{}
	}
	for k, v := range r.dependsOn(map[string]service.Role{prev: role}) {
		s.DependsOn[k] = v
	}
}

// nodeLabels names the node's lab and service to Ray (ray start --labels,
// Ray >= 2.49): nodes sharing a host address are told apart by them.
func (r renderer) nodeLabels(service string) string {
	return fmt.Sprintf("--labels=%s=%s,%s=%s", labels.RayNodeLab, r.p.Project, labels.RayNodeService, service)
}

// joinedProject renders a second host's plan: its workers only, joining
// the lab's head and MinIO on the first host; the dataset is this host's
// own copy.
func (r renderer) joinedProject() (*types.Project, error) {
	p, j := r.p, r.p.Joined
	services := types.Services{}
	prev := ""
	svc, _ := service.ByRole(service.RoleWorker)
	for _, w := range p.Workers {
		s, err := r.worker(svc, w)
		if err != nil {
			return nil, err
		}
		s.DependsOn = nil // the head and MinIO are the first host's
		s.Labels[labels.JoinedLab] = j.Lab
		r.hostWorker(&s, w, net.JoinHostPort(j.HeadIP, strconv.Itoa(j.GCSPort)), j.MinIO)
		r.shareRayTmp(&s, prev)
		services[s.Name] = s
		prev = s.Name
	}
	return &types.Project{Name: p.Project, Services: services,
		Volumes: types.Volumes{VolumeRayTmp: {}, VolumeData: {Name: p.DataVolume, External: true}}}, nil
}
