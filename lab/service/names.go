package service

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/mltrain/mltrain/internal/clierr"
)

// MaxProjectLen is the longest --project: every name derived from it stays
// legal. The longest are worker containers, <project>-ray-worker-NNN, which
// the engine's DNS serves on the lab's network, where a name is one DNS label
// (at most 63 bytes, RFC 1035). Volumes (<project>_prometheus-data), the
// network (<project>_default) and the state dir (~/.mltrain/<project>) are
// path components, limited to 255 bytes, so they fit with room to spare.
const MaxProjectLen = 63 - len("-ray-worker-") - 3

// CheckProject is the one rule for --project, used by every command: Compose's
// project-name rule (compose-go leaves the name as it is when it normalises
// it) and MaxProjectLen. Errors are usage errors (exit 2).
func CheckProject(name string) error {
	return clierr.WithCode(checkProject(name), clierr.ExitUsage)
}

func checkProject(name string) error {
	if name == "" || loader.NormalizeProjectName(name) != name {
		return clierr.Hintf("use lowercase letters, digits, '-' and '_', starting with a letter or digit, e.g. --project mltrain2",
			"--project %q is not a valid Compose project name", name)
	}
	if len(name) > MaxProjectLen {
		return clierr.Hintf(fmt.Sprintf("use a name of at most %d characters, e.g. --project %s", MaxProjectLen, name[:min(len(name), 12)]),
			"--project is %d characters long; at most %d keep the names derived from it legal (a container <project>-ray-worker-N is a DNS name of at most 63)",
			len(name), MaxProjectLen)
	}
	return nil
}

// WorkerIndexOf is the index of worker service s ("ray-worker-3": 3).
func WorkerIndexOf(s string) (int, bool) {
	if !strings.HasPrefix(s, workerPrefix) {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(s, workerPrefix))
	return i, err == nil && i >= 0
}

// WorkerService is the service (and, in the default project, container)
// name of worker i (0-based).
func WorkerService(i int) string { return fmt.Sprintf("%s%d", workerPrefix, i) }

// containerName is the container_name the renderer gives a service: the
// plain service name in the default project (the course's names),
// "<project>-<service>" in any other, so two labs on one engine never
// collide. It is only what lab writes; a container's name is read back by
// Compose's rule, compose.ContainerName, which honours container_name (and
// an override's).
func ContainerName(project, service string) string {
	if project == "" || project == DefaultProject {
		return service
	}
	return project + "-" + service
}

// DefaultAgentPort is Ray's dashboard agent HTTP port
// (ray_constants.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT); each worker has its
// own network namespace, so all may use it.
const DefaultAgentPort = 52365

// DefaultProject is the lab's name unless --project gives another: its
// containers then carry the course's names.
const DefaultProject = "mltrain"
