package exercise

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
)

// Labels that identify the lab's Ray worker containers.
const (
	LabelRole      = "mltrain.role"
	RoleWorker     = "worker"
	LabelProject   = "com.docker.compose.project"
	stopTimeoutSec = 10
)

// WorkerByIP finds the worker container that is the Ray node with ip: it
// lists containers labelled mltrain.role=worker (of project, when their
// compose project label says) and compares their network addresses.
func WorkerByIP(ctx context.Context, eng docker.Engine, project, ip string) (docker.ContainerDetails, error) {
	if eng == nil {
		return docker.ContainerDetails{}, clierr.Hintf("run mltrain on the lab's host, where Docker is reachable",
			"cannot find the worker container for Ray node %s: no Docker engine", ip)
	}
	list, err := eng.ContainerList(ctx, map[string]string{LabelRole: RoleWorker})
	if err != nil {
		return docker.ContainerDetails{}, fmt.Errorf("list worker containers: %w", err)
	}
	var matches []docker.ContainerDetails
	var seen []string
	for _, c := range list {
		if p, ok := c.Labels[LabelProject]; ok && project != "" && p != project {
			continue
		}
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return docker.ContainerDetails{}, fmt.Errorf("inspect worker container %s: %w", c.Name, err)
		}
		var ips []string
		for _, a := range d.Networks {
			if a == ip {
				matches = append(matches, d)
			}
			ips = append(ips, a)
		}
		sort.Strings(ips)
		seen = append(seen, fmt.Sprintf("%s (%s)", d.Name, strings.Join(ips, ", ")))
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		if len(seen) == 0 {
			return docker.ContainerDetails{}, clierr.Hintf("run 'mltrain status' to see the lab's workers",
				"no worker container (label %s=%s) found for Ray node %s", LabelRole, RoleWorker, ip)
		}
		return docker.ContainerDetails{}, clierr.Hintf("run 'mltrain status'; is RAY_ADDRESS pointing at this host's lab?",
			"no worker container has Ray node %s's address; workers seen: %s", ip, strings.Join(seen, "; "))
	}
	var names []string
	for _, m := range matches {
		names = append(names, m.Name)
	}
	return docker.ContainerDetails{}, clierr.Hintf("pass --project to pick the lab",
		"Ray node %s matches several worker containers: %s", ip, strings.Join(names, ", "))
}

// workerNames maps node IPs to container names, best effort (for reports).
func workerNames(ctx context.Context, eng docker.Engine, project string, ips []string) map[string]string {
	out := map[string]string{}
	if eng == nil {
		return out
	}
	for _, ip := range ips {
		if d, err := WorkerByIP(ctx, eng, project, ip); err == nil {
			out[ip] = d.Name
		}
	}
	return out
}
