package plan

import (
	"fmt"
	"net/netip"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/host"
)

// RayPorts are the ports one Ray node listens on when the lab's nodes span
// hosts. They run on the host's network then (a node must bind the address
// other hosts reach it at, which exists only in the host's namespace), so
// several nodes on one host need ports that never clash, and pinning them
// lets a firewall rule, status and the join preflight name each one.
type RayPorts struct {
	NodeManager     int `json:"node_manager"`
	ObjectManager   int `json:"object_manager"`
	AgentGRPC       int `json:"dashboard_agent_grpc"`
	AgentHTTP       int `json:"dashboard_agent_http"`
	RuntimeEnvAgent int `json:"runtime_env_agent"`
	Metrics         int `json:"metrics_export"`
	ClientServer    int `json:"ray_client_server,omitempty"` // head only
	MinWorker       int `json:"min_worker"`
	MaxWorker       int `json:"max_worker"`
}

// Port layout of host-network nodes: node slot k (the head 0, worker i i+1)
// owns [base+slotSpan*k, base+slotSpan*(k+1)): its agents at the start, its
// worker processes' range above. The whole layout stays below Linux's
// ephemeral range (32768), where NCCL and Torch pick their own ports.
const (
	DefaultRayPortBase = 20000
	slotSpan           = 1000
	workerOffset       = 100
	maxSlots           = 12
)

// NodePorts are slot's ports from base.
func NodePorts(base, slot int) RayPorts {
	a := base + slotSpan*slot
	p := RayPorts{NodeManager: a, ObjectManager: a + 1, AgentGRPC: a + 2, AgentHTTP: a + 3,
		RuntimeEnvAgent: a + 4, Metrics: a + 5, MinWorker: a + workerOffset, MaxWorker: a + slotSpan - 1}
	if slot == 0 {
		p.ClientServer = a + 6
	}
	return p
}

// checkRayPortBase refuses a base whose slots would leave the port space
// below the ephemeral range.
func checkRayPortBase(base, slots int) error {
	if slots > maxSlots {
		return fmt.Errorf("%d Ray nodes on one host: at most %d when nodes span hosts", slots, maxSlots)
	}
	if base < 1024 || base+slotSpan*slots > 32768 {
		return fmt.Errorf("--ray-port-base %d: the %d nodes' ports must fit between 1024 and 32768 (ephemeral ports start there)", base, slots)
	}
	return nil
}

// Flags are the `ray start` flags that pin p.
func (p RayPorts) Flags() []string {
	out := []string{
		fmt.Sprintf("--node-manager-port=%d", p.NodeManager),
		fmt.Sprintf("--object-manager-port=%d", p.ObjectManager),
		fmt.Sprintf("--dashboard-agent-grpc-port=%d", p.AgentGRPC),
		fmt.Sprintf("--dashboard-agent-listen-port=%d", p.AgentHTTP),
		fmt.Sprintf("--runtime-env-agent-port=%d", p.RuntimeEnvAgent),
		fmt.Sprintf("--metrics-export-port=%d", p.Metrics),
		fmt.Sprintf("--min-worker-port=%d", p.MinWorker),
		fmt.Sprintf("--max-worker-port=%d", p.MaxWorker),
	}
	if p.ClientServer > 0 {
		out = append(out, fmt.Sprintf("--ray-client-server-port=%d", p.ClientServer))
	}
	return out
}

// Range is the lowest and highest port of p, for firewall rules.
func (p RayPorts) Range() (lo, hi int) { return p.NodeManager, p.MaxWorker }

// spanHosts switches a plan to host networking: every Ray node of this host
// binds NodeIP, the head in slot 0 and worker i in slot i+1.
func spanHosts(p *Plan, facts host.Facts, base int) error {
	if facts.NodeIP == "" {
		return clierr.Hintf("pass this host's address on the network the other host shares, e.g. --node-ip 10.52.0.7 ('ip -4 addr' lists them)",
			"this host's address for other hosts is unknown (no default route): Ray's nodes must advertise an address the other host reaches")
	}
	if b, err := netip.ParseAddr(p.Bind); err == nil && !b.IsUnspecified() && p.Bind != facts.NodeIP {
		// The other hosts and the lab's own containers reach the dashboard
		// and MinIO where the node lives: a --bind elsewhere hides them.
		return clierr.WithCode(clierr.Hintf(fmt.Sprintf("use --bind 0.0.0.0, or --bind %s (this host's node address)", facts.NodeIP),
			"--allow-join with --bind %s: the other hosts reach the lab at %s", p.Bind, facts.NodeIP), clierr.ExitUsage)
	}
	if err := checkRayPortBase(base, len(p.Workers)+1); err != nil {
		return clierr.WithCode(clierr.WithHint(err, "choose another --ray-port-base, e.g. --ray-port-base 20000"), clierr.ExitUsage)
	}
	p.Network, p.NodeIP, p.RayPortBase = NetworkHost, facts.NodeIP, base
	if p.Head.Container != "" {
		hp := NodePorts(base, 0)
		p.Head.Ports = &hp
	}
	for i := range p.Workers {
		wp := NodePorts(base, i+1)
		p.Workers[i].Ports, p.Workers[i].AgentPort = &wp, wp.AgentHTTP
	}
	return nil
}
