package lab

import "strings"

// Role is what a service does in the lab. Every role's image (and its
// healthcheck) can be replaced, so tests can substitute local stand-ins.
type Role string

const (
	RoleHead       Role = "head"
	RoleWorker     Role = "worker"
	RoleJupyter    Role = "jupyter"
	RoleMinIO      Role = "minio"
	RolePrometheus Role = "prometheus"
	RoleGrafana    Role = "grafana"
)

// Roles lists every role, in the order services are described.
var Roles = []Role{RoleHead, RoleWorker, RoleMinIO, RolePrometheus, RoleGrafana, RoleJupyter}

func knownRole(r Role) bool {
	for _, k := range Roles {
		if k == r {
			return true
		}
	}
	return false
}

func roleList() string {
	s := make([]string, len(Roles))
	for i, r := range Roles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
