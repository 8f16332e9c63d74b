package lab

import (
	"fmt"
	"net"
	"strconv"
	"time"
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

// State is the content of StateFile, the one record of the lab's plan
// (which services it has, where they answer) for later commands (lab,
// verify, status) to reach the lab without re-planning. Up and join write
// it before starting anything and set UpAt when the lab is proven ready.
type State struct {
	Project string `json:"project"`
	Plan    Plan   `json:"plan"`
	URLs    URLs   `json:"urls"`
	Probes  Probes `json:"probes"`
	// UpAt is when up (or join) proved the lab ready; zero while the run
	// that wrote the plan has not finished.
	UpAt time.Time `json:"up_at,omitzero"`
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

// SaveState writes StateFile (0600: it sits beside the credentials).
func (d StateDir) SaveState(s State) error {
	return d.WriteJSON(StateFile, s)
}

// State reads StateFile; a missing file says to run up.
func (d StateDir) State() (State, error) {
	var s State
	err := d.ReadJSON(StateFile, &s)
	if isMissing(err) {
		return State{}, withNext(fmt.Errorf("no lab state at %s", d.File(StateFile)), func(c Commands) string {
			return "run '" + c.Line("up") + "' first (or pass --state-dir / --project of the lab you mean)"
		})
	}
	if err != nil {
		return State{}, withNext(err, func(c Commands) string { return "run '" + c.Line("up") + "' again to rewrite it" })
	}
	return s, nil
}
