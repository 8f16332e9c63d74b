// Package render turns the plan into a Compose project (compose-go v2
// types) and writes it with the files beside it (Prometheus, Grafana, the
// workspace).
//
// Choices: service names are the course's (ray-head,
// ray-worker-0.., minio, prometheus, grafana, jupyter); container names are
// the same in the default project and "<project>-<service>" otherwise.
// Every service has an exec-form healthcheck taken from the plan (so tests
// can substitute stand-in images and their checks), and depends_on waits for
// service_healthy (service_started when a check is disabled).
package render

import (
	"fmt"
	"strconv"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
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
func Project(p plan.Plan) (*types.Project, error) {
	if len(p.Workers) == 0 {
		return nil, fmt.Errorf("plan for project %q has no workers", p.Project)
	}
	r := renderer{p: p}
	if p.Joined != nil {
		return r.joinedProject()
	}
	services := types.Services{}
	for _, svc := range service.All {
		if svc.PerWorker {
			for _, w := range p.Workers {
				s, err := r.worker(svc, w)
				if err != nil {
					return nil, err
				}
				services[s.Name] = s
			}
			continue
		}
		s := r.base(svc, svc.Name)
		if extra := extras[svc.Role]; extra != nil {
			extra(r, &s)
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
	if p.Network == plan.NetworkHost {
		if err := r.spanHosts(proj.Services); err != nil {
			return nil, err
		}
	}
	if err := compose.CheckPorts(proj); err != nil {
		return nil, err
	}
	return proj, nil
}

type renderer struct{ p plan.Plan }

// base is what every service has from its table entry: names, image,
// role label, healthcheck and published ports.
func (r renderer) base(svc service.Service, name string) types.ServiceConfig {
	s := types.ServiceConfig{Name: name}
	s.ContainerName = service.ContainerName(r.p.Project, name)
	s.Image = r.p.Images[svc.Role]
	s.Labels = types.Labels{labels.Role: string(svc.Role)}
	s.Environment = types.MappingWithEquals{}
	s.HealthCheck = r.health(svc.Role)
	for _, port := range svc.Ports {
		if !port.HostNetwork {
			s.Ports = append(s.Ports, r.publish(port.Name, uint32(port.Container)))
		}
	}
	return s
}

func (r renderer) health(role service.Role) *types.HealthCheckConfig {
	test := r.p.Healthchecks[role]
	if len(test) == 0 || test[0] == "NONE" {
		return &types.HealthCheckConfig{Disable: true}
	}
	start := defaultStartPeriod
	if role == service.RoleHead || role == service.RoleWorker {
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
func (r renderer) dependsOn(deps map[string]service.Role) types.DependsOnConfig {
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
		"AWS_ENDPOINT_URL", fmt.Sprintf("http://%s:%d", service.MinIOService, service.ContainerPort(service.PortMinIOAPI)),
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

func volume(key, target string, ro bool) types.ServiceVolumeConfig {
	return types.ServiceVolumeConfig{Type: types.VolumeTypeVolume, Source: key, Target: target, ReadOnly: ro}
}

func bind(src, target string) types.ServiceVolumeConfig {
	return types.ServiceVolumeConfig{Type: types.VolumeTypeBind, Source: src, Target: target, ReadOnly: true}
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

func dur(d time.Duration) *types.Duration { v := types.Duration(d); return &v }
func u64(n uint64) *uint64                { return &n }
