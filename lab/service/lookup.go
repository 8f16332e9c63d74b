package service

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mltrain/mltrain/internal/gpu"
)

// Role is what a service does in the lab. Every role's image (and its
// healthcheck) can be replaced, so tests can substitute local stand-ins.
type Role string

// Roles lists every role, in the table's order.
func Roles() []Role {
	out := make([]Role, len(All))
	for i, s := range All {
		out[i] = s.Role
	}
	return out
}

// ByRole is the service of role r.
func ByRole(r Role) (Service, bool) {
	for _, s := range All {
		if s.Role == r {
			return s, true
		}
	}
	return Service{}, false
}

// KnownRole reports whether r is a role of the table.
func KnownRole(r Role) bool { _, ok := ByRole(r); return ok }

// RoleList is the roles as a flag's help names them.
func RoleList() string {
	s := make([]string, len(All))
	for i, r := range Roles() {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// DefaultImage is the image role r runs unless Options.Images replaces it.
func DefaultImage(r Role, rayVersion string, vendor gpu.Vendor) (string, error) {
	s, ok := ByRole(r)
	if !ok || s.Image == nil {
		return "", fmt.Errorf("no default image for role %q", r)
	}
	return s.Image(rayVersion, vendor)
}

// DefaultHealthcheck is role r's healthcheck test unless replaced.
func DefaultHealthcheck(r Role) []string {
	s, _ := ByRole(r)
	return slices.Clone(s.Healthcheck)
}

// Names are the services of a lab with the given worker services, in the
// table's order; joined: a host that joined another's lab (workers only).
func Names(workers []string, joined bool) []string {
	var out []string
	for _, s := range All {
		switch {
		case s.PerWorker:
			out = append(out, workers...)
		case !joined:
			out = append(out, s.Name)
		}
	}
	return out
}

// Static are the names of the services that are not per worker.
func Static() []string { return Names(nil, false) }

// Ports are every named port, in the table's order.
func Ports() []Port {
	var out []Port
	for _, s := range All {
		out = append(out, s.Ports...)
	}
	return out
}

// PortNamed is the port called name.
func PortNamed(name string) (Port, bool) {
	for _, p := range Ports() {
		if p.Name == name {
			return p, true
		}
	}
	return Port{}, false
}

// DefaultPorts are the host ports the course's text uses, by name.
func DefaultPorts() map[string]int {
	out := map[string]int{}
	for _, p := range Ports() {
		out[p.Name] = p.Host
	}
	return out
}

// PortNames are the port names, sorted.
func PortNames() []string {
	var names []string
	for _, p := range Ports() {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// ContainerPort is where the named port listens inside its container.
func ContainerPort(name string) int {
	p, _ := PortNamed(name)
	return p.Container
}

// Pages are the pages students open, in the table's order.
func Pages() []Page {
	var out []Page
	for _, s := range All {
		if s.Page != nil {
			out = append(out, *s.Page)
		}
	}
	return out
}
