package plan

import (
	"fmt"
	"net"
	"strconv"

	"github.com/mltrain/mltrain/lab/service"
)

// agentPort is the worker's agent port; plans written before it existed
// have none.
func (w Worker) AgentHTTPPort() int {
	if w.AgentPort == 0 {
		return service.DefaultAgentPort
	}
	return w.AgentPort
}

// rayHost is where the lab's bridge-networked services and this host's
// tools reach the head's dashboard: the bind address when the lab publishes
// on one, else the node address.
func (p Plan) RayHost() string {
	if ip := net.ParseIP(p.Bind); ip != nil && !ip.IsUnspecified() {
		return p.Bind
	}
	return p.NodeIP
}

// JupyterRayAddress is the RAY_ADDRESS Jupyter gets: the head's service
// name on the lab's network, or, when Ray's nodes are on the host network,
// the host's address (rayHost) and the dashboard's pinned port.
func (p Plan) JupyterRayAddress() string {
	if p.Network == NetworkHost {
		return "http://" + net.JoinHostPort(p.RayHost(), strconv.Itoa(p.Ports[service.PortDashboard]))
	}
	return fmt.Sprintf("http://%s:%d", service.HeadService, service.ContainerPort(service.PortDashboard))
}

// dashboardHost is what the head's dashboard binds in host mode: the same
// address the published browser ports use.
func (p Plan) DashboardHost() string {
	if ip := net.ParseIP(p.Bind); ip != nil && !ip.IsUnspecified() {
		return p.Bind
	}
	return "0.0.0.0"
}

// Services are the plan's services, in the service table's order (a
// joined host's: its workers).
func (p Plan) Services() []string {
	workers := make([]string, len(p.Workers))
	for i, w := range p.Workers {
		workers[i] = w.Service
	}
	return service.Names(workers, p.Joined != nil)
}
