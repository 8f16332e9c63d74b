package render

// What each role needs beyond its table entry (lab/service): commands,
// environment, volumes, dependencies. A service without an extra is
// rendered from its entry alone.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// extras are the roles' additions to their base service.
var extras = map[service.Role]func(r renderer, s *types.ServiceConfig){
	service.RoleHead:       head,
	service.RoleMinIO:      minio,
	service.RolePrometheus: prometheus,
	service.RoleGrafana:    grafana,
	service.RoleJupyter:    jupyter,
}

func head(r renderer, s *types.ServiceConfig) {
	// Root: the /tmp/ray volume is created root-owned and Ray must write
	// there (the course runs its head as root for the same reason).
	s.User = "0"
	s.Command = types.ShellCommand{"ray", "start", "--head",
		fmt.Sprintf("--port=%d", service.GCSPort),
		"--dashboard-host=0.0.0.0",
		fmt.Sprintf("--metrics-export-port=%d", service.MetricsPort),
		fmt.Sprintf("--num-cpus=%d", r.p.Head.CPUs),
		"--num-gpus=0",
		"--block"}
	r.rayEnv(s)
	r.setEnv(s,
		"RAY_GRAFANA_HOST", fmt.Sprintf("http://%s:%d", service.GrafanaService, service.ContainerPort(service.PortGrafana)),
		"RAY_GRAFANA_IFRAME_HOST", "http://"+net.JoinHostPort(r.p.HostIP, strconv.Itoa(r.p.Ports[service.PortGrafana])),
		"RAY_PROMETHEUS_HOST", fmt.Sprintf("http://%s:%d", service.PrometheusService, service.ContainerPort(service.PortPrometheus)),
		"RAY_PROMETHEUS_NAME", datasourceName,
	)
	s.ShmSize = types.UnitBytes(r.p.Head.ShmBytes)
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeRayTmp, rayTmp, false)}
}

func (r renderer) worker(svc service.Service, w plan.Worker) (types.ServiceConfig, error) {
	s := r.base(svc, w.Service)
	s.Labels[labels.WorkerIndex] = strconv.Itoa(w.Index)
	s.Labels[labels.Accelerator] = r.p.Accelerator
	s.Command = types.ShellCommand{"ray", "start",
		fmt.Sprintf("--address=%s:%d", service.HeadService, service.GCSPort),
		fmt.Sprintf("--num-cpus=%d", w.CPUs),
		// One GPU each; in CPU rehearsal a logical one, so jobs asking
		// for GPUs still schedule.
		"--num-gpus=1",
		fmt.Sprintf("--metrics-export-port=%d", service.MetricsPort),
		// Pinned: the healthcheck asks this node's agent about its raylet.
		fmt.Sprintf("--dashboard-agent-listen-port=%d", w.AgentHTTPPort()),
		"--block"}
	r.rayEnv(&s)
	r.setEnv(&s,
		"FOOD11_DATA_DIR", food11Dir,
		"MLTRAIN_ACCELERATOR", r.p.Accelerator,
		service.AgentPortEnv, strconv.Itoa(w.AgentHTTPPort()),
	)
	s.ShmSize = types.UnitBytes(w.ShmBytes)
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeData, dataMount, true)}
	// The head only: a worker needs MinIO when a job checkpoints, long after
	// up has proven MinIO ready, so workers start while MinIO still starts
	// (container starts are what grows with the number of workers).
	s.DependsOn = r.dependsOn(map[string]service.Role{service.HeadService: service.RoleHead})
	// A restarted head is a new Ray cluster: the old raylet exits after
	// gcs_rpc_server_reconnect_timeout_s and `ray start --block` exits 1, so
	// Docker starts the worker again and it joins the new head (as KubeRay's
	// worker pods do). Docker never restarts a container the user stopped
	// (docker stop cancels its restart manager): worker stop and the fault
	// exercise are unaffected. docs/ray-fidelity.md, "Head restart".
	s.Restart = types.RestartPolicyOnFailure

	g := w.GPU
	if g == nil {
		if r.p.Mode != plan.ModeCPU {
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
		// The container sees only its own render node, as device 0. The
		// course's ROCm compose sets both variables; Ray's amd_gpu.py reads
		// HIP_VISIBLE_DEVICES (ROCR's alone makes it raise) and raises on a
		// CUDA_VISIBLE_DEVICES that differs from HIP's, so none is set.
		// docs/ray-fidelity.md, "AMD visibility".
		r.setEnv(&s, "HIP_VISIBLE_DEVICES", "0", "ROCR_VISIBLE_DEVICES", "0")
	default:
		return s, fmt.Errorf("worker %s: unknown GPU vendor %q", w.Service, g.Vendor)
	}
	return s, nil
}

func minio(r renderer, s *types.ServiceConfig) {
	s.Command = types.ShellCommand{"server", "/data", "--console-address", fmt.Sprintf(":%d", service.ContainerPort(service.PortMinIOConsole))}
	r.setEnv(s,
		"MINIO_ROOT_USER", r.p.Credentials.MinIOAccessKey,
		"MINIO_ROOT_PASSWORD", r.p.Credentials.MinIOSecretKey,
	)
	s.Volumes = []types.ServiceVolumeConfig{volume(VolumeMinIO, "/data", false)}
}

func prometheus(r renderer, s *types.ServiceConfig) {
	s.Command = types.ShellCommand{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"}
	s.Volumes = []types.ServiceVolumeConfig{
		bind("./"+PrometheusDir, "/etc/prometheus"),
		// Ray's service-discovery file, rewritten by the head every 5 s.
		volume(VolumeRayTmp, rayTmp, true),
		volume(VolumePrometheus, "/prometheus", false),
	}
}

func grafana(r renderer, s *types.ServiceConfig) {
	r.setEnv(s,
		"GF_SECURITY_ADMIN_USER", plan.GrafanaAdminUser,
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
	s.Volumes = []types.ServiceVolumeConfig{
		bind("./"+GrafanaProvisioning, "/etc/grafana/provisioning"),
		// Ray writes its dashboards under the session dir at head start.
		volume(VolumeRayTmp, rayTmp, true),
		volume(VolumeGrafana, "/var/lib/grafana", false),
	}
	// Healthy head: its dashboards exist before Grafana provisions them.
	s.DependsOn = r.dependsOn(map[string]service.Role{service.PrometheusService: service.RolePrometheus, service.HeadService: service.RoleHead})
}

func jupyter(r renderer, s *types.ServiceConfig) {
	r.rayEnv(s)
	r.setEnv(s,
		"RAY_ADDRESS", r.p.JupyterRayAddress(),
		"JUPYTER_TOKEN", r.p.Credentials.JupyterToken,
	)
	src := r.p.Workspace
	if !isAbs(src) {
		src = "./" + src
	}
	// Write creates the directory: the engine's mount API does not.
	s.Volumes = []types.ServiceVolumeConfig{{Type: types.VolumeTypeBind, Source: src, Target: jupyterWork}}
	s.DependsOn = r.dependsOn(map[string]service.Role{service.HeadService: service.RoleHead})
}
