// Package service is the lab's service table: each service is one value
// (name, role, image, healthcheck, ports, readiness probe, the page it
// prints), the way lab/exercise's registry holds the exercises. The plan,
// the renderer, status, verify, up's readiness and URLs, logs and completion
// all read All; adding a service is one entry here (and, when it needs more
// than an image, ports and a healthcheck, its extra in lab/render).
package service

import (
	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/gpu"
)

// Service is one service of the lab.
type Service struct {
	// Name is the service's name and, in the default project, its
	// container's (the course's names); a per-worker service's are Name
	// followed by the worker's index.
	Name string
	Role Role
	// PerWorker: one such service per Ray worker; the only services a
	// host that joined another's lab runs.
	PerWorker bool
	// Image is the role's image unless --image-<role> replaces it;
	// ImageHelp is that flag's help.
	Image     func(rayVersion string, vendor gpu.Vendor) (string, error)
	ImageHelp string
	// Healthcheck is the role's exec-form Docker healthcheck test unless
	// replaced. All use only tools the pinned images ship.
	Healthcheck []string
	// Ports are the ports the lab publishes (or names) for the service.
	Ports []Port
	// Ready is the HTTP check up waits for; nil where readiness is judged
	// otherwise (Ray's nodes, by lab/lifecycle).
	Ready *Probe
	// Page is what students open in a browser; nil for none.
	Page *Page
}

// Port is one named port of a service.
type Port struct {
	Name      string // the --port name, and the key of Plan.Ports
	Container int    // where the service listens inside its container
	Host      int    // the host port by default (the course's)
	// Loopback: published on 127.0.0.1 only, never on --bind: no browser
	// UI, and unauthenticated or credential-guessing traffic.
	Loopback bool
	// HostNetwork: not published; bound on the host's network by a lab
	// whose nodes span hosts (Ray's GCS).
	HostNetwork bool
}

// Probe is an HTTP readiness check from this host.
type Probe struct {
	Port string // the named port it asks
	Path string
	// JupyterToken: the request carries the lab's Jupyter token.
	JupyterToken bool
}

// Page is a URL students open.
type Page struct {
	Key   string // its key in URLs (state.json, status --json)
	Title string // as printed
	Port  string // the named port it is on
	Path  string // e.g. "/lab"
	Note  string // printed beside it
}

// Page keys mltrain itself reads.
const (
	PageDashboard = "ray_dashboard"
	PageJupyter   = "jupyter"
)

// Roles.
const (
	RoleHead       Role = "head"
	RoleWorker     Role = "worker"
	RoleJupyter    Role = "jupyter"
	RoleMinIO      Role = "minio"
	RolePrometheus Role = "prometheus"
	RoleGrafana    Role = "grafana"
)

// Service names. They are the course's container names, so its text
// ("docker exec -it ray-worker-0 nvidia-smi") still applies; workers are
// numbered from 0 like the course's ray-worker-0 / ray-worker-1.
const (
	HeadService       = "ray-head"
	MinIOService      = "minio"
	PrometheusService = "prometheus"
	GrafanaService    = "grafana"
	JupyterService    = "jupyter"
	workerPrefix      = "ray-worker-"
)

// Port names, for Options.Ports and Plan.Ports.
const (
	PortDashboard    = "dashboard"     // Ray dashboard + Jobs API, on --bind
	PortGrafana      = "grafana"       // on --bind
	PortJupyter      = "jupyter"       // on --bind
	PortMinIOConsole = "minio-console" // on --bind
	PortMinIOAPI     = "minio-api"     // 127.0.0.1 only (mltrain makes the bucket through it)
	PortPrometheus   = "prometheus"    // 127.0.0.1 only
	PortGCS          = "gcs"           // Ray's GCS: on the host network only with --allow-join
)

// Pinned third-party images (never "latest": a lab must be reproducible).
const (
	MinIOImage      = "minio/minio:RELEASE.2025-09-07T16-13-09Z"
	PrometheusImage = "prom/prometheus:v3.5.0"
	GrafanaImage    = "grafana/grafana:12.1.1"
)

// Ray's ports inside its containers.
const (
	GCSPort     = 6379
	MetricsPort = 8080
)

// All is the lab's services, in the order they are described and listed.
var All = []Service{
	{
		Name: HeadService, Role: RoleHead, Image: rayImage,
		ImageHelp: "Ray head image (default: the worker image; job drivers run on the head and need torch)",
		// GCS reachable and healthy; the token comes from RAY_AUTH_TOKEN.
		Healthcheck: []string{"CMD", "ray", "health-check"},
		Ports: []Port{{Name: PortDashboard, Container: 8265, Host: 8265},
			{Name: PortGCS, Container: GCSPort, Host: GCSPort, HostNetwork: true}},
		Page: &Page{Key: PageDashboard, Title: "Ray dashboard", Port: PortDashboard},
	},
	{
		Name: workerPrefix, Role: RoleWorker, PerWorker: true, Image: rayImage,
		ImageHelp: "Ray worker image (default mltrain's CUDA or ROCm build for <ray-version>)",
		// This node's own raylet: `ray health-check --address ray-head:6379`
		// asked the head's GCS and passed for a worker whose raylet had died.
		Healthcheck: []string{"CMD", "python", "-c", workerHealthcheck},
	},
	{
		Name: MinIOService, Role: RoleMinIO, Image: pinned(MinIOImage),
		ImageHelp:   "MinIO image (default " + MinIOImage + ")",
		Healthcheck: []string{"CMD", "mc", "ready", "local"},
		Ports: []Port{{Name: PortMinIOAPI, Container: 9000, Host: 9000, Loopback: true},
			{Name: PortMinIOConsole, Container: 9001, Host: 9001}},
		Ready: &Probe{Port: PortMinIOAPI, Path: "/minio/health/ready"},
		Page:  &Page{Key: "minio_console", Title: "MinIO console", Port: PortMinIOConsole},
	},
	{
		Name: PrometheusService, Role: RolePrometheus, Image: pinned(PrometheusImage),
		ImageHelp:   "Prometheus image (default " + PrometheusImage + ")",
		Healthcheck: []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:9090/-/ready"},
		Ports:       []Port{{Name: PortPrometheus, Container: 9090, Host: 9090, Loopback: true}},
		Ready:       &Probe{Port: PortPrometheus, Path: "/-/ready"},
	},
	{
		Name: GrafanaService, Role: RoleGrafana, Image: pinned(GrafanaImage),
		ImageHelp:   "Grafana image (default " + GrafanaImage + ")",
		Healthcheck: []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:3000/api/health"},
		Ports:       []Port{{Name: PortGrafana, Container: 3000, Host: 3000}},
		Ready:       &Probe{Port: PortGrafana, Path: "/api/health"},
		Page:        &Page{Key: "grafana", Title: "Grafana", Port: PortGrafana, Note: "anonymous viewer"},
	},
	{
		Name: JupyterService, Role: RoleJupyter, Image: labImage(dockerfiles.JupyterRay),
		ImageHelp:   "Jupyter image (default mltrain's Jupyter build for <ray-version>)",
		Healthcheck: []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8888/api"},
		Ports:       []Port{{Name: PortJupyter, Container: 8888, Host: 8888}},
		Ready:       &Probe{Port: PortJupyter, Path: "/api", JupyterToken: true},
		Page:        &Page{Key: PageJupyter, Title: "Jupyter", Port: PortJupyter, Path: "/lab"},
	},
}

// rayImage is the Ray nodes' image: the CUDA one on NVIDIA hosts and in CPU
// rehearsal (its PyTorch runs on CPU too), the ROCm one on AMD hosts. The
// head runs the workers' image: job drivers run on the head (so stopping a
// worker in the fault exercise never kills them), and a Ray Train / Tune
// driver imports torch and lightning, which rayproject/ray lacks. One image
// also means one Python and one Ray on every node. The head gets no GPU
// whatever its image.
func rayImage(rayVersion string, vendor gpu.Vendor) (string, error) {
	if vendor == gpu.AMD {
		return dockerfiles.Ref(dockerfiles.RayROCm, rayVersion)
	}
	return dockerfiles.Ref(dockerfiles.RayCUDA, rayVersion)
}

func labImage(kind dockerfiles.Kind) func(string, gpu.Vendor) (string, error) {
	return func(rayVersion string, _ gpu.Vendor) (string, error) { return dockerfiles.Ref(kind, rayVersion) }
}

func pinned(ref string) func(string, gpu.Vendor) (string, error) {
	return func(string, gpu.Vendor) (string, error) { return ref, nil }
}
