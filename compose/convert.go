package compose

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"

	"github.com/mltrain/mltrain/internal/docker"
)

// ContainerName is the name of service's container: container_name when set,
// else compose's <project>-<service>-1.
func ContainerName(p *types.Project, s types.ServiceConfig) string {
	if s.ContainerName != "" {
		return s.ContainerName
	}
	return fmt.Sprintf("%s-%s-1", p.Name, s.Name)
}

// NetworkName is the engine name of a project network key.
func NetworkName(p *types.Project, key string) string {
	if n, ok := p.Networks[key]; ok && n.Name != "" {
		return n.Name
	}
	return p.Name + "_" + key
}

// VolumeName is the engine name of a project volume key.
func VolumeName(p *types.Project, key string) string {
	if v, ok := p.Volumes[key]; ok && v.Name != "" {
		return v.Name
	}
	return p.Name + "_" + key
}

// serviceNetworks returns the service's network keys, sorted; "default" when
// it names none (compose's rule).
func serviceNetworks(s types.ServiceConfig) []string {
	if len(s.Networks) == 0 {
		return []string{"default"}
	}
	keys := make([]string, 0, len(s.Networks))
	for k := range s.Networks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ToSpec translates one compose service into the engine's container create
// request. Fields the lab never uses and the engine API cannot express
// one-to-one are refused by name rather than silently dropped.
func ToSpec(p *types.Project, s types.ServiceConfig, labels map[string]string) (docker.ContainerSpec, error) {
	if err := unsupported(s); err != nil {
		return docker.ContainerSpec{}, err
	}
	cfg := &container.Config{
		Image:      s.Image,
		Cmd:        []string(s.Command),
		Entrypoint: []string(s.Entrypoint),
		Env:        envList(s.Environment),
		Labels:     labels,
		User:       s.User,
		WorkingDir: s.WorkingDir,
		Hostname:   s.Hostname,
		Domainname: s.DomainName,
		StopSignal: s.StopSignal,
		Tty:        s.Tty,
		OpenStdin:  s.StdinOpen,
	}
	if s.StopGracePeriod != nil {
		secs := int(time.Duration(*s.StopGracePeriod).Seconds())
		cfg.StopTimeout = &secs
	}
	if hc := s.HealthCheck; hc != nil {
		cfg.Healthcheck = &container.HealthConfig{Test: []string(hc.Test)}
		if hc.Disable {
			cfg.Healthcheck.Test = []string{"NONE"}
		}
		if hc.Interval != nil {
			cfg.Healthcheck.Interval = time.Duration(*hc.Interval)
		}
		if hc.Timeout != nil {
			cfg.Healthcheck.Timeout = time.Duration(*hc.Timeout)
		}
		if hc.StartPeriod != nil {
			cfg.Healthcheck.StartPeriod = time.Duration(*hc.StartPeriod)
		}
		if hc.StartInterval != nil {
			cfg.Healthcheck.StartInterval = time.Duration(*hc.StartInterval)
		}
		if hc.Retries != nil {
			cfg.Healthcheck.Retries = int(*hc.Retries)
		}
	}

	host := &container.HostConfig{
		GroupAdd:       s.GroupAdd,
		CapAdd:         s.CapAdd,
		CapDrop:        s.CapDrop,
		SecurityOpt:    s.SecurityOpt,
		Privileged:     s.Privileged,
		ReadonlyRootfs: s.ReadOnly,
		ExtraHosts:     s.ExtraHosts.AsList(":"),
		Init:           s.Init,
		IpcMode:        container.IpcMode(s.Ipc),
		PidMode:        container.PidMode(s.Pid),
		Runtime:        s.Runtime,
		ShmSize:        int64(s.ShmSize),
		Sysctls:        map[string]string(s.Sysctls),
		DNS:            toAddrs(s.DNS),
	}
	if len(s.Tmpfs) > 0 {
		host.Tmpfs = map[string]string{}
		for _, t := range s.Tmpfs {
			path, opts, _ := strings.Cut(t, ":")
			host.Tmpfs[path] = opts
		}
	}
	if err := restartPolicy(s, host); err != nil {
		return docker.ContainerSpec{}, err
	}
	resources(s, &host.Resources)
	for _, d := range s.Devices {
		perm := d.Permissions
		if perm == "" {
			perm = "rwm"
		}
		target := d.Target
		if target == "" {
			target = d.Source
		}
		host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: d.Source, PathInContainer: target, CgroupPermissions: perm})
	}
	for name, u := range s.Ulimits {
		soft, hard := int64(u.Soft), int64(u.Hard)
		if u.Single != 0 {
			soft, hard = int64(u.Single), int64(u.Single)
		}
		host.Ulimits = append(host.Ulimits, &units.Ulimit{Name: name, Soft: soft, Hard: hard})
	}
	sort.Slice(host.Ulimits, func(i, j int) bool { return host.Ulimits[i].Name < host.Ulimits[j].Name })

	if err := ports(s, cfg, host); err != nil {
		return docker.ContainerSpec{}, err
	}
	if err := mounts(p, s, host); err != nil {
		return docker.ContainerSpec{}, err
	}

	netCfg := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{}}
	if s.NetworkMode != "" {
		host.NetworkMode = container.NetworkMode(s.NetworkMode)
	} else {
		keys := serviceNetworks(s)
		if len(keys) > 1 {
			return docker.ContainerSpec{}, fmt.Errorf("service %s: attaching to %d networks is not supported; use one network", s.Name, len(keys))
		}
		name := NetworkName(p, keys[0])
		host.NetworkMode = container.NetworkMode(name)
		aliases := []string{s.Name}
		if nc := s.Networks[keys[0]]; nc != nil {
			aliases = append(aliases, nc.Aliases...)
		}
		netCfg.EndpointsConfig[name] = &network.EndpointSettings{Aliases: aliases}
	}
	return docker.ContainerSpec{Name: ContainerName(p, s), Config: cfg, HostConfig: host, Networking: netCfg}, nil
}

func unsupported(s types.ServiceConfig) error {
	var bad []string
	if s.Build != nil && s.Image == "" {
		bad = append(bad, "build (mltrain builds images itself; give an image)")
	}
	if len(s.Secrets) > 0 {
		bad = append(bad, "secrets")
	}
	if len(s.Configs) > 0 {
		bad = append(bad, "configs")
	}
	if len(s.VolumesFrom) > 0 {
		bad = append(bad, "volumes_from")
	}
	if s.Scale != nil && *s.Scale > 1 || s.Deploy != nil && s.Deploy.Replicas != nil && *s.Deploy.Replicas > 1 {
		bad = append(bad, "scale/replicas > 1 (use --workers)")
	}
	if len(bad) > 0 {
		return fmt.Errorf("service %s uses %s, which mltrain does not apply; remove it from compose.override.yaml", s.Name, strings.Join(bad, ", "))
	}
	return nil
}

func envList(m types.MappingWithEquals) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v == nil { // "KEY" without value: unset in compose semantics
			continue
		}
		out = append(out, k+"="+*v)
	}
	sort.Strings(out)
	return out
}

func toAddrs(list []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range list {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

func restartPolicy(s types.ServiceConfig, host *container.HostConfig) error {
	switch r := s.Restart; {
	case r == "" || r == "no":
	case r == "always":
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyAlways}
	case r == "unless-stopped":
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyUnlessStopped}
	case strings.HasPrefix(r, "on-failure"):
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyOnFailure}
		if _, n, ok := strings.Cut(r, ":"); ok {
			c, err := strconv.Atoi(n)
			if err != nil {
				return fmt.Errorf("service %s: restart %q: %w", s.Name, r, err)
			}
			host.RestartPolicy.MaximumRetryCount = c
		}
	default:
		return fmt.Errorf("service %s: unknown restart policy %q", s.Name, r)
	}
	return nil
}

func resources(s types.ServiceConfig, r *container.Resources) {
	r.CpusetCpus = s.CPUSet
	r.CPUShares = s.CPUShares
	if s.CPUS > 0 {
		r.NanoCPUs = int64(float64(s.CPUS) * 1e9)
	}
	r.Memory = int64(s.MemLimit)
	r.MemoryReservation = int64(s.MemReservation)
	if s.PidsLimit != 0 {
		pl := s.PidsLimit
		r.PidsLimit = &pl
	}
	addReq := func(d types.DeviceRequest) {
		req := container.DeviceRequest{Driver: d.Driver, Count: int(d.Count), DeviceIDs: d.IDs, Options: map[string]string(d.Options)}
		if len(d.Capabilities) > 0 {
			req.Capabilities = [][]string{d.Capabilities}
		}
		if req.Count == 0 && len(req.DeviceIDs) == 0 {
			req.Count = -1 // compose: no count and no ids means all
		}
		r.DeviceRequests = append(r.DeviceRequests, req)
	}
	for _, g := range s.Gpus {
		if len(g.Capabilities) == 0 {
			g.Capabilities = []string{"gpu"}
		}
		addReq(g)
	}
	if s.Deploy != nil {
		if l := s.Deploy.Resources.Limits; l != nil {
			if l.NanoCPUs > 0 {
				r.NanoCPUs = int64(float64(l.NanoCPUs) * 1e9)
			}
			if l.MemoryBytes > 0 {
				r.Memory = int64(l.MemoryBytes)
			}
			if l.Pids > 0 {
				pl := l.Pids
				r.PidsLimit = &pl
			}
		}
		if rv := s.Deploy.Resources.Reservations; rv != nil {
			for _, d := range rv.Devices {
				addReq(d)
			}
			if rv.MemoryBytes > 0 {
				r.MemoryReservation = int64(rv.MemoryBytes)
			}
		}
	}
}

func ports(s types.ServiceConfig, cfg *container.Config, host *container.HostConfig) error {
	if len(s.Ports) == 0 && len(s.Expose) == 0 {
		return nil
	}
	cfg.ExposedPorts = network.PortSet{}
	host.PortBindings = network.PortMap{}
	for _, e := range s.Expose {
		port, err := network.ParsePort(e)
		if err != nil {
			return fmt.Errorf("service %s: expose %q: %w", s.Name, e, err)
		}
		cfg.ExposedPorts[port] = struct{}{}
	}
	for _, pc := range s.Ports {
		proto := pc.Protocol
		if proto == "" {
			proto = "tcp"
		}
		port, err := network.ParsePort(fmt.Sprintf("%d/%s", pc.Target, proto))
		if err != nil {
			return fmt.Errorf("service %s: port %d: %w", s.Name, pc.Target, err)
		}
		cfg.ExposedPorts[port] = struct{}{}
		b := network.PortBinding{HostPort: pc.Published}
		if pc.HostIP != "" {
			ip, err := netip.ParseAddr(pc.HostIP)
			if err != nil {
				return fmt.Errorf("service %s: port %d host_ip %q: %w", s.Name, pc.Target, pc.HostIP, err)
			}
			b.HostIP = ip
		}
		host.PortBindings[port] = append(host.PortBindings[port], b)
	}
	return nil
}

func mounts(p *types.Project, s types.ServiceConfig, host *container.HostConfig) error {
	for _, v := range s.Volumes {
		m := mount.Mount{Target: v.Target, ReadOnly: v.ReadOnly}
		switch v.Type {
		case types.VolumeTypeVolume:
			m.Type = mount.TypeVolume
			if v.Source != "" {
				m.Source = VolumeName(p, v.Source)
			}
			if v.Volume != nil && v.Volume.NoCopy {
				m.VolumeOptions = &mount.VolumeOptions{NoCopy: true}
			}
		case types.VolumeTypeBind:
			m.Type, m.Source = mount.TypeBind, v.Source
			if v.Bind != nil && v.Bind.Propagation != "" {
				m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(v.Bind.Propagation)}
			}
		case types.VolumeTypeTmpfs:
			m.Type = mount.TypeTmpfs
			if v.Tmpfs != nil && v.Tmpfs.Size > 0 {
				m.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: int64(v.Tmpfs.Size)}
			}
		default:
			return fmt.Errorf("service %s: volume %s of type %q is not supported", s.Name, v.Target, v.Type)
		}
		host.Mounts = append(host.Mounts, m)
	}
	return nil
}

// newConfig is a minimal container config (tests and helper containers).
func newConfig(image string, labels map[string]string) *container.Config {
	return &container.Config{Image: image, Labels: labels}
}
