package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab"
)

// StateFile is written by a successful up: what later commands (lab, verify,
// status) need to reach the lab without re-planning it.
const StateFile = "state.json"

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

// State is the content of StateFile.
type State struct {
	Project string    `json:"project"`
	Plan    lab.Plan  `json:"plan"`
	URLs    URLs      `json:"urls"`
	Probes  Probes    `json:"probes"`
	UpAt    time.Time `json:"up_at"`
}

// MakeURLs builds the browser URLs from the plan's address and ports.
// Ports published on one specific address (--bind 127.0.0.1) are reached
// there, whatever the host's public address is.
func MakeURLs(p lab.Plan) URLs {
	host := p.HostIP
	if ip := net.ParseIP(p.Bind); ip != nil && !ip.IsUnspecified() {
		host = p.Bind
	}
	u := func(name string) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(p.Ports[name]))
	}
	return URLs{
		RayDashboard: u(lab.PortDashboard), Grafana: u(lab.PortGrafana),
		MinIOConsole: u(lab.PortMinIOConsole), Jupyter: u(lab.PortJupyter) + "/lab",
	}
}

// probeAddrs are the URLs mltrain probes from this host: loopback for ports
// published on all addresses or on loopback, else the bind address.
func probeAddrs(p lab.Plan) Probes {
	hostFor := func(name string) string {
		if lab.LoopbackOnly(name) {
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
	return Probes{Ray: u(lab.PortDashboard), MinIO: u(lab.PortMinIOAPI), Grafana: u(lab.PortGrafana),
		Prometheus: u(lab.PortPrometheus), Jupyter: u(lab.PortJupyter)}
}

// SaveState writes StateFile (0600: it sits beside the credentials).
func SaveState(dir string, s State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lab state: %w", err)
	}
	path := filepath.Join(dir, StateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write lab state %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write lab state %s: %w", path, err)
	}
	return nil
}

// LoadState reads StateFile; a missing file says to run up.
func LoadState(dir string) (State, error) {
	path := filepath.Join(dir, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, clierr.Hintf("run 'mltrain up' first (or pass --state-dir / --project of the lab you mean)", "no lab state at %s", path)
	}
	if err != nil {
		return State{}, fmt.Errorf("read lab state %s: %w", path, err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, clierr.Hintf("run 'mltrain up' again to rewrite it", "lab state %s is not valid JSON: %v", path, err)
	}
	return s, nil
}
