// Package plan is where the lab's plan is made: the options a user
// chooses (validated on their own), and the plan computed from them and the
// host's facts: GPUs given to workers, sizing, images, ports, Ray's ports
// when the nodes span hosts, a joining host's plan, and the GPU driver
// check. It is pure: everything comes from the facts, the options and the
// credentials, so 'mltrain render' can plan for a host you are not on. The
// values the plan carries (credentials, the join bundle, URLs) are here too.
package plan

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/service"
)

// Defaults of the options.
const (
	DefaultRayVersion = dockerfiles.DefaultRayVersion // the Dockerfiles' ARG default
	DefaultDataVolume = "food11"
	DefaultBind       = "0.0.0.0"
	DefaultWorkspace  = "workspace"
)

// Options are the user's choices; the zero value means "all defaults".
type Options struct {
	Project    string `json:"project"`     // Compose project; default "mltrain"
	RayVersion string `json:"ray_version"` // default 2.54.0
	// Workers is the number of Ray workers; 0 means one per GPU (two in
	// CPU rehearsal and in share mode).
	Workers  int  `json:"workers,omitempty"`
	ShareGPU bool `json:"share_gpu,omitempty"`
	// Bind is the address the browser-facing ports are published on.
	Bind string `json:"bind"`
	// Sizing overrides; 0 means computed from the host.
	HeadCPUs   int    `json:"head_cpus,omitempty"`
	WorkerCPUs int    `json:"worker_cpus,omitempty"`
	WorkerShm  int64  `json:"worker_shm_bytes,omitempty"`
	DataVolume string `json:"data_volume"` // external volume holding Food-11; default "food11"
	// Workspace is the host directory mounted in Jupyter at
	// /home/jovyan/work: relative paths are relative to the directory
	// compose.yaml is written to. Default "workspace".
	Workspace string `json:"workspace"`
	// Images replaces a role's image; missing roles get DefaultImage.
	Images map[service.Role]string `json:"images,omitempty"`
	// Healthchecks replaces a role's exec-form healthcheck test (the full
	// Docker form, starting with "CMD"); missing roles get DefaultHealthcheck.
	Healthchecks map[service.Role][]string `json:"healthchecks,omitempty"`
	// Ports replaces host ports by name (see DefaultPorts).
	Ports map[string]int `json:"ports,omitempty"`
	// AllowJoin prepares the lab for workers on other hosts (`mltrain
	// join`): Ray's nodes run on the host's network at the host's NodeIP
	// with pinned ports from RayPortBase, and MinIO's API is published on
	// --bind for the other hosts' workers.
	AllowJoin   bool `json:"allow_join,omitempty"`
	RayPortBase int  `json:"ray_port_base,omitempty"` // default DefaultRayPortBase
}

// WithDefaults returns opts with every empty field set to its default.
func (o Options) WithDefaults() Options {
	if o.Project == "" {
		o.Project = service.DefaultProject
	}
	if o.RayVersion == "" {
		o.RayVersion = DefaultRayVersion
	}
	if o.Bind == "" {
		o.Bind = DefaultBind
	}
	if o.DataVolume == "" {
		o.DataVolume = DefaultDataVolume
	}
	if o.RayPortBase == 0 {
		o.RayPortBase = DefaultRayPortBase
	}
	if o.Workspace == "" {
		o.Workspace = DefaultWorkspace
	}
	return o
}

// Validate checks the options on their own (not against the host); errors
// name the flag to fix and are usage errors (exit 2).
func (o Options) Validate() error {
	return clierr.WithCode(o.validate(), clierr.ExitUsage)
}

func (o Options) validate() error {
	o = o.WithDefaults()
	if err := service.CheckProject(o.Project); err != nil {
		return err
	}
	if err := checkRayVersion(o.RayVersion); err != nil {
		return err
	}
	if o.Workers < 0 {
		return clierr.Hintf("use --workers 1 or more, or leave it out for one worker per GPU", "--workers %d: must not be negative", o.Workers)
	}
	if _, err := ParseBind(o.Bind); err != nil {
		return err
	}
	if o.HeadCPUs < 0 || o.WorkerCPUs < 0 {
		return clierr.Hintf("leave --head-cpus/--worker-cpus out to size them from the host", "--head-cpus/--worker-cpus must not be negative")
	}
	if o.WorkerShm < 0 {
		return clierr.Hintf("leave --shm-size out to size it from the host", "--shm-size must not be negative")
	}
	if strings.ContainsAny(o.DataVolume, "/: ") {
		return clierr.Hintf("name a Docker volume, e.g. --data-volume food11", "--data-volume %q is not a volume name", o.DataVolume)
	}
	for r, img := range o.Images {
		if !service.KnownRole(r) {
			return clierr.Hintf(fmt.Sprintf("use one of %s", service.RoleList()), "image override for unknown role %q", r)
		}
		if err := checkImageRef(r, img); err != nil {
			return err
		}
	}
	for r, hc := range o.Healthchecks {
		if !service.KnownRole(r) {
			return clierr.Hintf(fmt.Sprintf("use one of %s", service.RoleList()), "healthcheck override for unknown role %q", r)
		}
		if len(hc) == 0 || (hc[0] != "CMD" && hc[0] != "NONE") || (hc[0] == "CMD" && len(hc) < 2) {
			return clierr.Hintf(`give the exec form, e.g. ["CMD", "/standin", "health"], or ["NONE"] to disable it`,
				"healthcheck for role %s: %q is not an exec-form test", r, hc)
		}
	}
	return checkPorts(o.Ports)
}

func checkImageRef(r service.Role, img string) error {
	flag := "--image-" + string(r)
	if img == "" || strings.ContainsAny(img, " \t\n$") {
		return clierr.Hintf(fmt.Sprintf("give an image reference with a tag, e.g. %s repo/name:1.0", flag), "%s %q is not an image reference", flag, img)
	}
	// "name" and "name:latest" float: a lab must start the same image tomorrow.
	last := img[strings.LastIndex(img, "/")+1:]
	if !strings.Contains(last, ":") && !strings.Contains(img, "@") {
		return clierr.Hintf(fmt.Sprintf("pin a tag, e.g. %s %s:1.0", flag, img), "%s %q has no tag; mltrain never runs floating images", flag, img)
	}
	if strings.HasSuffix(last, ":latest") {
		return clierr.Hintf(fmt.Sprintf("pin a version tag instead of latest, e.g. %s %s", flag, strings.TrimSuffix(img, ":latest")+":1.0"),
			"%s %q uses the floating tag latest", flag, img)
	}
	return nil
}

// rayVersionRE reads X.Y.Z with an optional suffix such as rc1.
var rayVersionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)([a-z0-9.+-]*)$`)

// CheckRayVersion is the one rule for --ray-version, used by up, render,
// build and images: X.Y.Z (with an optional suffix such as rc1), and never a
// Ray without token authentication (< 2.52).
func CheckRayVersion(v string) error {
	return clierr.WithCode(checkRayVersion(v), clierr.ExitUsage)
}

func checkRayVersion(v string) error {
	m := rayVersionRE.FindStringSubmatch(v)
	if m == nil {
		return clierr.Hintf("give a Ray release, e.g. --ray-version "+DefaultRayVersion, "--ray-version %q is not a Ray version (X.Y.Z)", v)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 2 || major == 2 && minor < 52 {
		return clierr.Hintf("use --ray-version 2.52.0 or newer (default "+DefaultRayVersion+")",
			"--ray-version %s has no token authentication (needs Ray >= 2.52); mltrain will not run an unauthenticated dashboard", v)
	}
	return nil
}

// ParseBind checks a --bind address: an IP address, 0.0.0.0 (or ::) for all.
func ParseBind(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, clierr.Hintf("use --bind 0.0.0.0 (every address), 127.0.0.1 (this host only) or one of this host's IP addresses",
			"--bind %q is not an IP address", s)
	}
	return a, nil
}

func checkPorts(ports map[string]int) error {
	names := make([]string, 0, len(ports))
	for n := range ports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := service.DefaultPorts()[n]; !ok {
			return clierr.Hintf("use one of "+strings.Join(service.PortNames(), ", "), "--port %s: unknown port name %q", n, n)
		}
		if p := ports[n]; p < 1 || p > 65535 {
			return clierr.Hintf(fmt.Sprintf("give a port between 1 and 65535, e.g. --port %s=%d", n, service.DefaultPorts()[n]+10000), "--port %s=%d is not a port number", n, p)
		}
	}
	// Two services on one host port: the second container could never start.
	used := map[int]string{}
	for _, n := range service.PortNames() {
		p := service.DefaultPorts()[n]
		if v, ok := ports[n]; ok {
			p = v
		}
		if other, dup := used[p]; dup {
			return clierr.Hintf(fmt.Sprintf("give one of them another port, e.g. --port %s=%d", n, p+10000),
				"--port: %s and %s would both use host port %d", other, n, p)
		}
		used[p] = n
	}
	return nil
}
