// Rendering the plan into a Compose project (compose-go v2 types).
//
// Choices: service names are the course's (ray-head,
// ray-worker-0.., minio, prometheus, grafana, jupyter); container names are
// the same in the default project and "<project>-<service>" otherwise.
// Every service has an exec-form healthcheck taken from the plan (so tests
// can substitute stand-in images and their checks), and depends_on waits for
// service_healthy (service_started when a check is disabled).
package lab

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/labels"
)

// Files mltrain writes beside compose.yaml, relative to its directory.
const (
	PrometheusDir       = "prometheus"
	PrometheusConfig    = "prometheus/prometheus.yml"
	GrafanaProvisioning = "grafana/provisioning"
	GrafanaDatasource   = "grafana/provisioning/datasources/prometheus.yml"
	GrafanaDashboards   = "grafana/provisioning/dashboards/ray.yml"
)

// Volume keys in the project (engine names are <project>_<key>, except the
// external data volume, which keeps its own name).
const (
	VolumeRayTmp     = "ray-tmp"
	VolumeMinIO      = "minio-data"
	VolumePrometheus = "prometheus-data"
	VolumeGrafana    = "grafana-data"
	VolumeData       = "food11"
)

// Container-side ports and paths.
const (
	gcsPort            = 6379
	dashboardPort      = 8265
	metricsPort        = 8080
	minioAPIPort       = 9000
	minioConsolePort   = 9001
	prometheusPort     = 9090
	grafanaPort        = 3000
	jupyterPort        = 8888
	rayTmp             = "/tmp/ray"
	serviceDiscovery   = rayTmp + "/prom_metrics_service_discovery.json"
	rayDashboardsDir   = rayTmp + "/session_latest/metrics/grafana/dashboards"
	datasourceName     = "Prometheus"
	dataMount          = "/mnt"
	food11Dir          = dataMount + "/Food-11"
	jupyterWork        = "/home/jovyan/work"
	s3Region           = "us-east-1"
	headStartPeriod    = 60 * time.Second
	defaultStartPeriod = 30 * time.Second
)

// Project turns a plan into a Compose project. It does no I/O; bind-mount
// sources are relative to the directory compose.yaml is written to, and
// compose.Load resolves them.
func Project(p Plan) (*types.Project, error) {
	if len(p.Workers) == 0 {
		return nil, fmt.Errorf("plan for project %q has no workers", p.Project)
	}
	r := renderer{p: p}
	if p.Joined != nil {
		return r.joinedProject()
	}
	services := types.Services{}
	for _, s := range []types.ServiceConfig{r.head(), r.minio(), r.prometheus(), r.grafana(), r.jupyter()} {
		services[s.Name] = s
	}
	for _, w := range p.Workers {
		s, err := r.worker(w)
		if err != nil {
			return nil, err
		}
		services[s.Name] = s
	}
	proj := &types.Project{
		Name:     p.Project,
		Services: services,
		Volumes: types.Volumes{
			VolumeRayTmp:     {},
			VolumeMinIO:      {},
			VolumePrometheus: {},
			VolumeGrafana:    {},
			// The dataset outlives every lab (and `down --volumes`): it is
			// loaded once by `mltrain data food11` and only referenced here.
			VolumeData: {Name: p.DataVolume, External: true},
		},
	}
	if p.Network == NetworkHost {
		if err := r.spanHosts(proj.Services); err != nil {
			return nil, err
		}
	}
	if err := compose.CheckPorts(proj); err != nil {
		return nil, err
	}
	return proj, nil
}

type renderer struct{ p Plan }

func (r renderer) base(name string, role Role) types.ServiceConfig {
	s := types.ServiceConfig{Name: name}
	s.ContainerName = containerName(r.p.Project, name)
	s.Image = r.p.Images[role]
	s.Labels = types.Labels{labels.Role: string(role)}
	s.Environment = types.MappingWithEquals{}
	s.HealthCheck = r.health(role)
	return s
}

func (r renderer) health(role Role) *types.HealthCheckConfig {
	test := r.p.Healthchecks[role]
	if len(test) == 0 || test[0] == "NONE" {
		return &types.HealthCheckConfig{Disable: true}
	}
	start := defaultStartPeriod
	if role == RoleHead || role == RoleWorker {
		start = headStartPeriod // ray start takes a while, more on a busy host
	}
	return &types.HealthCheckConfig{
		Test:        append(types.HealthCheckTest(nil), test...),
		Interval:    dur(5 * time.Second),
		Timeout:     dur(10 * time.Second),
		Retries:     u64(6),
		StartPeriod: dur(start),
	}
}

// dependsOn waits for each dependency to be healthy, or only started when its
// healthcheck is disabled (it would never become healthy).
func (r renderer) dependsOn(deps map[string]Role) types.DependsOnConfig {
	out := types.DependsOnConfig{}
	for svc, role := range deps {
		cond := types.ServiceConditionHealthy
		if hc := r.p.Healthchecks[role]; len(hc) == 0 || hc[0] == "NONE" {
			cond = types.ServiceConditionStarted
		}
		out[svc] = types.ServiceDependency{Condition: cond, Required: true}
	}
	return out
}

func (r renderer) setEnv(s *types.ServiceConfig, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		s.Environment[kv[i]] = &v
	}
}

// rayEnv is what every Ray process (head, workers, Jupyter's driver) needs:
// the token, and MinIO as S3 for Ray Train checkpoints, as the lab user
// limited to the bucket "ray": students' code runs here, and MinIO's root
// key would let it delete or replace anything in MinIO.
func (r renderer) rayEnv(s *types.ServiceConfig) {
	c := r.p.Credentials
	r.setEnv(s,
		"RAY_AUTH_MODE", "token",
		"RAY_AUTH_TOKEN", c.RayAuthToken,
		"RAY_USAGE_STATS_ENABLED", "0",
		"AWS_ENDPOINT_URL", fmt.Sprintf("http://%s:%d", MinIOService, minioAPIPort),
		"AWS_ACCESS_KEY_ID", c.MinIOLabAccessKey,
		"AWS_SECRET_ACCESS_KEY", c.MinIOLabSecretKey,
		"AWS_DEFAULT_REGION", s3Region,
		// Drivers run on the head: it must pick the workers' backend
		// (gloo on CPU rehearsal, not NCCL) the same way train.py does there.
		"MLTRAIN_ACCELERATOR", r.p.Accelerator,
	)
}

// publish maps a named host port to target: on --bind for browser ports,
// on 127.0.0.1 for the others.
func (r renderer) publish(name string, target uint32) types.ServicePortConfig {
	ip := r.p.Bind
	if r.p.LoopbackOnly(name) {
		ip = "127.0.0.1"
	}
	return types.ServicePortConfig{
		Mode:      "ingress",
		HostIP:    ip,
		Target:    target,
		Published: strconv.Itoa(r.p.Ports[name]),
		Protocol:  "tcp",
	}
}

func (r renderer) head() types.ServiceConfig {
	s := r.base(HeadService, RoleHead)
	// Root: the /tmp/ray volume is created root-owned and Ray must write
	// there (the course runs its head as root for the same reason).
	s.User = "0"
	s.Command = types.ShellCommand{"ray", "start", "--head",
		fmt.Sprintf("--port=%d", gcsPort),
		"--dashboard-host=0.0.0.0",
		fmt.Sprintf("--metrics-export-port=%d", metricsPort),
		fmt.Sprintf("--num-cpus=%d", r.p.Head.CPUs),
		"--num-gpus=0",
		"--block"}
	r.rayEnv(&s)
	r.setEnv(&s,
		"RAY_GRAFANA_HOST", fmt.Sprintf("http://%s:%d", GrafanaService, grafanaPort),
		"RAY_GRAFANA_IFRAME_HOST", "http://"+net.JoinHostPort(r.p.HostIP, strconv.Itoa(r.p.Ports[PortGrafana])),
		"RAY_PROMETHEUS_HOST", fmt.Sprintf("http://%s:%d", PrometheusService, prometheusPort),
		"RAY_PROMETHEUS_NAME", datasourceName,
	)
	s.ShmSize = types.UnitBytes(r.p.Head.ShmBytes)
	s.Ports = []types.ServicePortConfig{r.publish(PortDashboard, dashboardPort)}
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeRayTmp, rayTmp, false)}
	return s
}

func (r renderer) worker(w Worker) (types.ServiceConfig, error) {
	s := r.base(w.Service, RoleWorker)
	s.Labels[labels.WorkerIndex] = strconv.Itoa(w.Index)
	s.Labels[labels.Accelerator] = r.p.Accelerator
	s.Command = types.ShellCommand{"ray", "start",
		fmt.Sprintf("--address=%s:%d", HeadService, gcsPort),
		fmt.Sprintf("--num-cpus=%d", w.CPUs),
		// One GPU each; in CPU rehearsal a logical one, so jobs asking
		// for GPUs still schedule.
		"--num-gpus=1",
		fmt.Sprintf("--metrics-export-port=%d", metricsPort),
		// Pinned: the healthcheck asks this node's agent about its raylet.
		fmt.Sprintf("--dashboard-agent-listen-port=%d", w.agentPort()),
		"--block"}
	r.rayEnv(&s)
	r.setEnv(&s,
		"FOOD11_DATA_DIR", food11Dir,
		"MLTRAIN_ACCELERATOR", r.p.Accelerator,
		AgentPortEnv, strconv.Itoa(w.agentPort()),
	)
	s.ShmSize = types.UnitBytes(w.ShmBytes)
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeData, dataMount, true)}
	// The head only: a worker needs MinIO when a job checkpoints, long after
	// up has proven MinIO ready, so workers start while MinIO still starts
	// (container starts are what grows with the number of workers).
	s.DependsOn = r.dependsOn(map[string]Role{HeadService: RoleHead})
	// A restarted head is a new Ray cluster: the old raylet exits after
	// gcs_rpc_server_reconnect_timeout_s and `ray start --block` exits 1, so
	// Docker starts the worker again and it joins the new head (as KubeRay's
	// worker pods do). Docker never restarts a container the user stopped
	// (docker stop cancels its restart manager): worker stop and the fault
	// exercise are unaffected. docs/ray-fidelity.md, "Head restart".
	s.Restart = types.RestartPolicyOnFailure

	g := w.GPU
	if g == nil {
		if r.p.Mode != ModeCPU {
			return s, fmt.Errorf("worker %s has no GPU outside CPU rehearsal", w.Service)
		}
		return s, nil
	}
	s.Labels[labels.GPUUUID] = g.UUID
	if g.PCIBusID != "" {
		s.Labels[labels.GPUPCI] = g.PCIBusID
	}
	if w.SharedGPU {
		s.Labels[labels.GPUShared] = "true"
	}
	switch g.Vendor {
	case gpu.NVIDIA:
		// By UUID: indices shift when GPUs are hidden or reordered.
		s.Deploy = &types.DeployConfig{Resources: types.Resources{Reservations: &types.Resource{
			Devices: []types.DeviceRequest{{Driver: "nvidia", IDs: []string{g.UUID}, Capabilities: []string{"gpu"}}},
		}}}
	case gpu.AMD:
		s.Labels[labels.GPURenderNode] = g.RenderNode
		s.Devices = []types.DeviceMapping{
			{Source: "/dev/kfd", Target: "/dev/kfd", Permissions: "rwm"},
			{Source: g.RenderNode, Target: g.RenderNode, Permissions: "rwm"},
		}
		video := "video"
		if r.p.VideoGID > 0 {
			video = strconv.Itoa(r.p.VideoGID) // the image's "video" may have another id
		}
		s.GroupAdd = []string{video}
		if r.p.RenderGID > 0 {
			s.GroupAdd = append(s.GroupAdd, strconv.Itoa(r.p.RenderGID))
		}
		// The container sees only its own render node, as device 0.
		r.setEnv(&s, "HIP_VISIBLE_DEVICES", "0", "ROCR_VISIBLE_DEVICES", "0")
	default:
		return s, fmt.Errorf("worker %s: unknown GPU vendor %q", w.Service, g.Vendor)
	}
	return s, nil
}

func (r renderer) minio() types.ServiceConfig {
	s := r.base(MinIOService, RoleMinIO)
	s.Command = types.ShellCommand{"server", "/data", "--console-address", fmt.Sprintf(":%d", minioConsolePort)}
	r.setEnv(&s,
		"MINIO_ROOT_USER", r.p.Credentials.MinIOAccessKey,
		"MINIO_ROOT_PASSWORD", r.p.Credentials.MinIOSecretKey,
	)
	s.Ports = []types.ServicePortConfig{
		r.publish(PortMinIOAPI, minioAPIPort),
		r.publish(PortMinIOConsole, minioConsolePort),
	}
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeMinIO, "/data", false)}
	return s
}

func (r renderer) prometheus() types.ServiceConfig {
	s := r.base(PrometheusService, RolePrometheus)
	s.Command = types.ShellCommand{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"}
	s.Ports = []types.ServicePortConfig{r.publish(PortPrometheus, prometheusPort)}
	s.Volumes = []types.ServiceVolumeConfig{
		bind("./"+PrometheusDir, "/etc/prometheus"),
		// Ray's service-discovery file, rewritten by the head every 5 s.
		volume(VolumeRayTmp, rayTmp, true),
		volume(VolumePrometheus, "/prometheus", false),
	}
	return s
}

func (r renderer) grafana() types.ServiceConfig {
	s := r.base(GrafanaService, RoleGrafana)
	r.setEnv(&s,
		"GF_SECURITY_ADMIN_USER", GrafanaAdminUser,
		"GF_SECURITY_ADMIN_PASSWORD", r.p.Credentials.GrafanaAdminPassword,
		"GF_SECURITY_ALLOW_EMBEDDING", "true", // the Ray dashboard embeds panels
		"GF_AUTH_ANONYMOUS_ENABLED", "true",
		"GF_AUTH_ANONYMOUS_ORG_ROLE", "Viewer", // the course used Admin: anyone could edit
		"GF_USERS_ALLOW_SIGN_UP", "false",
		"GF_ANALYTICS_REPORTING_ENABLED", "false",
		"GF_ANALYTICS_CHECK_FOR_UPDATES", "false",
		"GF_ANALYTICS_CHECK_FOR_PLUGIN_UPDATES", "false",
		"GF_NEWS_NEWS_FEED_ENABLED", "false",
	)
	s.Ports = []types.ServicePortConfig{r.publish(PortGrafana, grafanaPort)}
	s.Volumes = []types.ServiceVolumeConfig{
		bind("./"+GrafanaProvisioning, "/etc/grafana/provisioning"),
		// Ray writes its dashboards under the session dir at head start.
		volume(VolumeRayTmp, rayTmp, true),
		volume(VolumeGrafana, "/var/lib/grafana", false),
	}
	// Healthy head: its dashboards exist before Grafana provisions them.
	s.DependsOn = r.dependsOn(map[string]Role{PrometheusService: RolePrometheus, HeadService: RoleHead})
	return s
}

func (r renderer) jupyter() types.ServiceConfig {
	s := r.base(JupyterService, RoleJupyter)
	r.rayEnv(&s)
	r.setEnv(&s,
		"RAY_ADDRESS", r.p.JupyterRayAddress(),
		"JUPYTER_TOKEN", r.p.Credentials.JupyterToken,
	)
	s.Ports = []types.ServicePortConfig{r.publish(PortJupyter, jupyterPort)}
	src := r.p.Workspace
	if !isAbs(src) {
		src = "./" + src
	}
	// Write creates the directory: the engine's mount API does not.
	s.Volumes = []types.ServiceVolumeConfig{{Type: types.VolumeTypeBind, Source: src, Target: jupyterWork}}
	s.DependsOn = r.dependsOn(map[string]Role{HeadService: RoleHead})
	return s
}

func volume(key, target string, ro bool) types.ServiceVolumeConfig {
	return types.ServiceVolumeConfig{Type: types.VolumeTypeVolume, Source: key, Target: target, ReadOnly: ro}
}

func bind(src, target string) types.ServiceVolumeConfig {
	return types.ServiceVolumeConfig{Type: types.VolumeTypeBind, Source: src, Target: target, ReadOnly: true}
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

func dur(d time.Duration) *types.Duration { v := types.Duration(d); return &v }
func u64(n uint64) *uint64                { return &n }
