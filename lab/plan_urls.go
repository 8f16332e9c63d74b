package lab

import (
	"net"
	"strconv"
)

// URLs are what students open in a browser.
type URLs struct {
	RayDashboard string `json:"ray_dashboard"`
	Grafana      string `json:"grafana"`
	MinIOConsole string `json:"minio_console"`
	Jupyter      string `json:"jupyter"` // without the token
}

// Probes are the addresses mltrain itself uses from this host.
type Probes struct {
	Ray        string `json:"ray"`
	MinIO      string `json:"minio"`
	Grafana    string `json:"grafana"`
	Prometheus string `json:"prometheus"`
	Jupyter    string `json:"jupyter"`
}

// MakeURLs builds the browser URLs from the plan's address and ports.
// Ports published on one specific address (--bind 127.0.0.1) are reached
// there, whatever the host's public address is.
func MakeURLs(p Plan) URLs {
	host := p.HostIP
	if ip := net.ParseIP(p.Bind); ip != nil && !ip.IsUnspecified() {
		host = p.Bind
	}
	u := func(name string) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(p.Ports[name]))
	}
	return URLs{
		RayDashboard: u(PortDashboard), Grafana: u(PortGrafana),
		MinIOConsole: u(PortMinIOConsole), Jupyter: u(PortJupyter) + "/lab",
	}
}

// probeAddrs are the URLs mltrain probes from this host: loopback for ports
// published on all addresses or on loopback, else the bind address.
func probeAddrs(p Plan) Probes {
	hostFor := func(name string) string {
		if p.LoopbackOnly(name) {
			return "127.0.0.1"
		}
		if ip := net.ParseIP(p.Bind); ip != nil && !ip.IsUnspecified() {
			return p.Bind
		}
		return "127.0.0.1"
	}
	u := func(name string) string {
		return "http://" + net.JoinHostPort(hostFor(name), strconv.Itoa(p.Ports[name]))
	}
	return Probes{Ray: u(PortDashboard), MinIO: u(PortMinIOAPI), Grafana: u(PortGrafana),
		Prometheus: u(PortPrometheus), Jupyter: u(PortJupyter)}
}
