package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/service"
)

// Choices are what the user chose for a lab: its options and the addresses
// given (--host-ip, --node-ip). Up records them in state.json; a later up
// or render starts from them, so a bare re-run changes nothing and a flag
// changes only what it names.
type Choices struct {
	Options Options `json:"options"`
	HostIP  string  `json:"host_ip,omitempty"`
	NodeIP  string  `json:"node_ip,omitempty"`
	// LeaseEnd is when the node's lease ends (--lease-end, 'mltrain
	// lease'); zero when not known. Commands remind the user to back up
	// before it, and exercises that cannot finish before it are refused.
	LeaseEnd time.Time `json:"lease_end,omitzero"`
}

// Given reports whether the user named a flag on this command line.
type Given func(flag string) bool

// Over is c with every choice the user did not name taken from prev: a
// map flag (--port) replaces only the keys it names.
func (c Choices) Over(prev Choices, given Given) Choices {
	out := prev
	o, p := c.Options, &out.Options
	pick := func(flag string, set func()) {
		if given(flag) {
			set()
		}
	}
	pick("ray-version", func() { p.RayVersion = o.RayVersion })
	pick("workers", func() { p.Workers = o.Workers })
	pick("share-gpu", func() { p.ShareGPU = o.ShareGPU })
	pick("bind", func() { p.Bind = o.Bind })
	pick("head-cpus", func() { p.HeadCPUs = o.HeadCPUs })
	pick("worker-cpus", func() { p.WorkerCPUs = o.WorkerCPUs })
	pick("shm-size", func() { p.WorkerShm = o.WorkerShm })
	pick("data-volume", func() { p.DataVolume = o.DataVolume })
	pick("workspace", func() { p.Workspace = o.Workspace })
	pick("allow-join", func() { p.AllowJoin = o.AllowJoin })
	pick("ray-port-base", func() { p.RayPortBase = o.RayPortBase })
	pick("host-ip", func() { out.HostIP = c.HostIP })
	pick("node-ip", func() { out.NodeIP = c.NodeIP })
	pick("lease-end", func() { out.LeaseEnd = c.LeaseEnd })
	p.Images = maps.Clone(prev.Options.Images)
	for _, r := range service.Roles() {
		if img, ok := o.Images[r]; ok && given("image-"+string(r)) {
			if p.Images == nil {
				p.Images = map[service.Role]string{}
			}
			p.Images[r] = img
		}
	}
	p.Ports = maps.Clone(prev.Options.Ports)
	if given("port") {
		if p.Ports == nil {
			p.Ports = map[string]int{}
		}
		maps.Copy(p.Ports, o.Ports)
	}
	// Not flags: what the caller set stands (tests' stand-in healthchecks).
	p.Project, p.Healthchecks = o.Project, o.Healthchecks
	return out
}

// Changes says, in words, what c changes from prev: "worker image: A -> B".
func (c Choices) Changes(prev Choices) []string {
	a, b := prev.Options.WithDefaults(), c.Options.WithDefaults()
	var out []string
	add := func(what string, from, to any) {
		if fmt.Sprint(from) != fmt.Sprint(to) {
			out = append(out, fmt.Sprintf("%s: %v → %v", what, orDefault(from), orDefault(to)))
		}
	}
	add("Ray version", a.RayVersion, b.RayVersion)
	add("workers", a.Workers, b.Workers)
	add("share GPU", a.ShareGPU, b.ShareGPU)
	add("bind address", a.Bind, b.Bind)
	add("head CPUs", a.HeadCPUs, b.HeadCPUs)
	add("worker CPUs", a.WorkerCPUs, b.WorkerCPUs)
	add("worker shared memory", bytesOr(a.WorkerShm), bytesOr(b.WorkerShm))
	add("data volume", a.DataVolume, b.DataVolume)
	add("workspace", a.Workspace, b.Workspace)
	add("allow join", a.AllowJoin, b.AllowJoin)
	add("Ray port base", a.RayPortBase, b.RayPortBase)
	add("host address", prev.HostIP, c.HostIP)
	add("node address", prev.NodeIP, c.NodeIP)
	if !prev.LeaseEnd.Equal(c.LeaseEnd) {
		out = append(out, fmt.Sprintf("lease end: %s → %s", leaseWords(prev.LeaseEnd), leaseWords(c.LeaseEnd)))
	}
	for _, r := range service.Roles() {
		add(string(r)+" image", a.Images[r], b.Images[r])
	}
	names := slices.Collect(maps.Keys(a.Ports))
	for n := range b.Ports {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		add("port "+n, port(a.Ports, n), port(b.Ports, n))
	}
	return out
}

func port(ports map[string]int, name string) int {
	if p, ok := ports[name]; ok {
		return p
	}
	return service.DefaultPorts()[name]
}

func bytesOr(b int64) string {
	if b == 0 {
		return ""
	}
	return progress.Bytes(b)
}

// orDefault names an empty or zero choice: the default.
func orDefault(v any) any {
	switch s := fmt.Sprint(v); {
	case s == "" || s == "0":
		return "default"
	case strings.TrimSpace(s) != s:
		return fmt.Sprintf("%q", s)
	}
	return v
}
