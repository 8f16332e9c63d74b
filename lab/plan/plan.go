package plan

import (
	"errors"
	"net/netip"
	"regexp"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/service"
)

// Mode is how the lab uses the host's GPUs.
type Mode string

const (
	// ModeStandard gives each worker its own GPU (one worker per GPU by default).
	ModeStandard Mode = "standard"
	// ModeShared runs two workers on a host's single GPU (--share-gpu).
	ModeShared Mode = "shared"
	// ModeCPU is the rehearsal lab on a host without GPU hardware: each
	// worker advertises one logical GPU so every exercise still schedules.
	ModeCPU Mode = "cpu"
)

// Accelerator values, as workers see them in MLTRAIN_ACCELERATOR.
const (
	AccelCUDA = "cuda"
	AccelROCm = "rocm"
	AccelCPU  = "cpu"
)

// Plan is the lab computed from the host's facts and the options: every
// decision the Compose rendering needs, and nothing it must look up.
type Plan struct {
	Project     string     `json:"project"`
	Mode        Mode       `json:"mode"`
	Vendor      gpu.Vendor `json:"vendor,omitempty"` // "" in CPU rehearsal
	Accelerator string     `json:"accelerator"`      // cuda | rocm | cpu
	RayVersion  string     `json:"ray_version"`
	// HostIP is the address students' browsers use (Grafana iframes, URLs).
	HostIP string `json:"host_ip"`
	// Bind is the address browser-facing ports are published on.
	Bind string `json:"bind"`
	// Ports are host ports by name (DefaultPorts plus overrides).
	Ports        map[string]int            `json:"ports"`
	Images       map[service.Role]string   `json:"images"`
	Healthchecks map[service.Role][]string `json:"healthchecks"`
	Head         Head                      `json:"head"`
	Workers      []Worker                  `json:"workers"`
	DataVolume   string                    `json:"data_volume"`
	Workspace    string                    `json:"workspace"`
	// Host groups for AMD device access (0: unknown).
	RenderGID int `json:"render_gid,omitempty"`
	VideoGID  int `json:"video_gid,omitempty"`
	// Network is how Ray's nodes are networked: NetworkBridge (the lab's
	// own Docker network, nothing of Ray reachable from outside) or
	// NetworkHost (nodes span hosts: each binds NodeIP with pinned Ports).
	Network string `json:"network"`
	// NodeIP is the address this host's Ray nodes advertise (NetworkHost).
	NodeIP      string `json:"node_ip,omitempty"`
	RayPortBase int    `json:"ray_port_base,omitempty"`
	// Joined is set on a second host: the lab its workers joined. Such a
	// plan has workers only.
	Joined *Joined `json:"joined,omitempty"`
	// Credentials are rendered into service environments; never printed.
	Credentials Credentials `json:"-"`
	// Warnings must be shown to the user (CPU rehearsal, unknown groups...).
	Warnings []string `json:"warnings,omitempty"`
}

// Head is the Ray head's sizing.
type Head struct {
	Container string `json:"container"`
	CPUs      int    `json:"cpus"`
	ShmBytes  int64  `json:"shm_bytes"`
	// Ports are pinned when the lab's nodes span hosts (NetworkHost).
	Ports *RayPorts `json:"ray_ports,omitempty"`
}

// Worker is one Ray worker and the GPU it has.
type Worker struct {
	Index     int    `json:"index"` // 0-based
	Service   string `json:"service"`
	Container string `json:"container"`
	// GPU is the device this worker gets; nil in CPU rehearsal.
	GPU *gpu.GPU `json:"gpu,omitempty"`
	// SharedGPU: another worker has the same GPU (share mode).
	SharedGPU bool  `json:"shared_gpu,omitempty"`
	CPUs      int   `json:"cpus"`
	ShmBytes  int64 `json:"shm_bytes"`
	// Ports are pinned when the lab's nodes span hosts (NetworkHost).
	Ports *RayPorts `json:"ray_ports,omitempty"`
	// AgentPort is where this node's Ray dashboard agent listens for HTTP
	// (ray start --dashboard-agent-listen-port); the worker's healthcheck
	// asks it about this node's raylet. One per node: nodes sharing a host
	// network need distinct ones.
	AgentPort int `json:"agent_port,omitempty"`
}

// Ray networking of a plan.
const (
	NetworkBridge = "bridge"
	NetworkHost   = "host"
)

// LoopbackOnly reports whether the named port is published on 127.0.0.1
// rather than on Bind. A lab whose nodes span hosts publishes MinIO's API on
// Bind too: the other hosts' workers write their checkpoints there (as the
// bucket-limited lab user).
func (p Plan) LoopbackOnly(portName string) bool {
	if p.Network == NetworkHost && portName == service.PortMinIOAPI {
		return false
	}
	port, _ := service.PortNamed(portName)
	return port.Loopback
}

const (
	mib = int64(1) << 20
	gib = int64(1) << 30

	// Share of host memory given to the workers' /dev/shm together (Ray's
	// object store lives there), and the bounds per worker.
	shmPercent  = 30
	shmMin      = 256 * mib
	shmMaxPer   = 16 * gib
	cpuWorkers  = 2 // CPU rehearsal: enough for the multi-worker exercises
	maxWorkers  = 64
	headShmPct  = 5
	headShmMax  = 2 * gib
	cpuReserved = 4 // kept for head, MinIO, Jupyter, Prometheus, Grafana on big hosts
)

var renderNodeRE = regexp.MustCompile(`^/dev/dri/renderD[0-9]+$`)

var hostNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// CPUWarning is the loud warning of a CPU rehearsal lab.
const CPUWarning = "NO GPU on this host: this is a CPU REHEARSAL lab. Each worker advertises 1 logical GPU " +
	"so every exercise schedules, but training runs on the CPU (MLTRAIN_ACCELERATOR=cpu) and is far slower; " +
	"do not use its timings as GPU results."

// NewPlan computes the lab. It is pure: everything comes from facts, opts
// and creds, so `mltrain render` can plan for a host you are not on.
func New(facts host.Facts, opts Options, creds Credentials) (Plan, error) {
	if err := opts.Validate(); err != nil {
		return Plan{}, err
	}
	opts = opts.WithDefaults()
	if err := creds.Validate(); err != nil {
		return Plan{}, err
	}
	if facts.CPUs < 1 {
		return Plan{}, clierr.Hintf("pass the host's CPU count, e.g. --cpus 64", "the host's CPU count is unknown (%d)", facts.CPUs)
	}
	if facts.MemoryBytes < 1 {
		return Plan{}, clierr.Hintf("pass the host's memory, e.g. --memory 256g", "the host's memory size is unknown (%d bytes)", facts.MemoryBytes)
	}
	p := Plan{
		Project:     opts.Project,
		RayVersion:  opts.RayVersion,
		Bind:        opts.Bind,
		DataVolume:  opts.DataVolume,
		Workspace:   opts.Workspace,
		RenderGID:   facts.RenderGID,
		VideoGID:    facts.VideoGID,
		Credentials: creds,
	}
	hostIP, warn, err := browserAddress(facts.HostIP, opts.Bind)
	if err != nil {
		return Plan{}, err
	}
	p.HostIP = hostIP
	if warn != "" {
		p.Warnings = append(p.Warnings, warn)
	}

	gpus, warns, err := usableGPUs(facts.GPUs)
	if err != nil {
		return Plan{}, err
	}
	p.Warnings = append(p.Warnings, warns...)
	assigned, err := assign(&p, gpus, opts)
	if err != nil {
		return Plan{}, err
	}

	if err := size(&p, facts, opts, assigned); err != nil {
		return Plan{}, err
	}

	p.Ports = map[string]int{}
	for n, v := range service.DefaultPorts() {
		p.Ports[n] = v
	}
	for n, v := range opts.Ports {
		p.Ports[n] = v
	}
	p.Images = map[service.Role]string{}
	p.Healthchecks = map[service.Role][]string{}
	for _, r := range service.Roles() {
		img, ok := opts.Images[r]
		if !ok {
			if img, err = service.DefaultImage(r, opts.RayVersion, p.Vendor); err != nil {
				return Plan{}, err
			}
		}
		p.Images[r] = img
		hc, ok := opts.Healthchecks[r]
		if !ok {
			hc = service.DefaultHealthcheck(r)
		}
		p.Healthchecks[r] = append([]string(nil), hc...)
	}
	if err := checkDevicesAndDriver(&p, facts, opts); err != nil {
		return Plan{}, err
	}
	p.Network = NetworkBridge
	if opts.AllowJoin {
		if err := spanHosts(&p, facts, opts.RayPortBase); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// browserAddress picks the address students' browsers use.
func browserAddress(hostIP, bind string) (string, string, error) {
	if hostIP != "" {
		if _, err := netip.ParseAddr(hostIP); err != nil && !hostNameRE.MatchString(hostIP) {
			return "", "", clierr.Hintf("give the address browsers use, e.g. --host-ip 129.114.27.10",
				"--host-ip %q is neither an IP address nor a host name", hostIP)
		}
		return hostIP, "", nil
	}
	if a, err := netip.ParseAddr(bind); err == nil && !a.IsUnspecified() {
		return bind, "", nil
	}
	return "localhost", "the address browsers use to reach this host is unknown; URLs and Grafana panels in the Ray " +
		"dashboard use localhost (pass --host-ip to fix)", nil
}

// errNoCreds is returned for zero credentials (a caller forgot to load them).
var errNoCreds = errors.New("lab credentials are missing")
