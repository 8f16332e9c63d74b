package plan

import (
	"net"
	"strconv"

	"github.com/mltrain/mltrain/lab/service"
)

// URLs are what students open in a browser, by the table's page keys
// ("ray_dashboard", "grafana", "minio_console", "jupyter": without its token).
type URLs map[string]string

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
	urls := URLs{}
	for _, pg := range service.Pages() {
		urls[pg.Key] = "http://" + net.JoinHostPort(host, strconv.Itoa(p.Ports[pg.Port])) + pg.Path
	}
	return urls
}

// ProbeURL is where mltrain reaches the named port from this host:
// loopback for ports published on all addresses or on loopback, else the
// bind address.
func (p Plan) ProbeURL(port string) string {
	host := "127.0.0.1"
	if ip := net.ParseIP(p.Bind); !p.LoopbackOnly(port) && ip != nil && !ip.IsUnspecified() {
		host = p.Bind
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(p.Ports[port]))
}

// ProbeAddrs are the addresses mltrain's own clients and checks use.
func ProbeAddrs(p Plan) Probes {
	u := p.ProbeURL
	return Probes{Ray: u(service.PortDashboard), MinIO: u(service.PortMinIOAPI), Grafana: u(service.PortGrafana),
		Prometheus: u(service.PortPrometheus), Jupyter: u(service.PortJupyter)}
}
