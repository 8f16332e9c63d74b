package status

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
)

// WorkerContainer is one Ray worker's container as the engine reports it.
type WorkerContainer struct {
	Index   int // -1 when the container carries no index label
	Project string
	docker.ContainerDetails
}

// IPs are the worker's addresses on its networks, sorted.
func (w WorkerContainer) IPs() []string {
	var ips []string
	for _, ip := range w.Networks {
		if ip != "" {
			ips = append(ips, ip)
		}
	}
	sort.Strings(ips)
	return ips
}

// WorkerQuery picks one worker: by index, or by the address Ray lists for
// its node. Project "" matches the workers of every lab on the engine.
type WorkerQuery struct {
	Project string
	Index   *int
	IP      string
}

func (q WorkerQuery) String() string {
	if q.Index != nil {
		return fmt.Sprintf("worker %d", *q.Index)
	}
	return "the worker of Ray node " + q.IP
}

// ListWorkers lists the worker containers (label mltrain.role=worker) of
// project ("" for every lab), by index: the one lookup behind `mltrain
// worker`, status and the exercises' "which container is this Ray node".
func ListWorkers(ctx context.Context, eng docker.Engine, project string) ([]WorkerContainer, error) {
	if eng == nil {
		return nil, clierr.Hintf("run mltrain on the lab's host, where Docker is reachable", "cannot list the lab's worker containers: no Docker engine")
	}
	filter := map[string]string{labels.Role: labels.RoleWorker}
	if project != "" {
		filter[labels.Project] = project
	}
	list, err := eng.ContainerList(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list worker containers: %w", err)
	}
	out := make([]WorkerContainer, 0, len(list))
	for _, c := range list {
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("inspect worker container %s: %w", c.Name, err)
		}
		idx, err := strconv.Atoi(c.Labels[labels.WorkerIndex])
		if err != nil {
			idx = -1
		}
		out = append(out, WorkerContainer{Index: idx, Project: c.Labels[labels.Project], ContainerDetails: d})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Project != out[j].Project {
			return out[i].Project < out[j].Project
		}
		return out[i].Index < out[j].Index
	})
	return out, nil
}

// FindWorker returns the one worker container q names, or an error saying
// which workers exist.
func FindWorker(ctx context.Context, eng docker.Engine, q WorkerQuery) (WorkerContainer, error) {
	all, err := ListWorkers(ctx, eng, q.Project)
	if err != nil {
		return WorkerContainer{}, err
	}
	var matches []WorkerContainer
	var seen []string
	for _, w := range all {
		ok := q.Index != nil && w.Index == *q.Index
		if q.Index == nil {
			for _, ip := range w.IPs() {
				ok = ok || ip == q.IP
			}
		}
		if ok {
			matches = append(matches, w)
		}
		if q.Index != nil {
			seen = append(seen, strconv.Itoa(w.Index))
		} else {
			seen = append(seen, fmt.Sprintf("%s (%s)", w.Name, strings.Join(w.IPs(), ", ")))
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		var names []string
		for _, m := range matches {
			names = append(names, m.Name)
		}
		return WorkerContainer{}, clierr.Hintf("pass --project to pick the lab", "%s matches several worker containers: %s", q, strings.Join(names, ", "))
	case len(all) == 0:
		return WorkerContainer{}, clierr.WithNext(fmt.Errorf("no worker container (label %s=%s) found for %s", labels.Role, labels.RoleWorker, q),
			clierr.Step("run '%s' to see the lab's workers", "status"))
	case q.Index != nil:
		return WorkerContainer{}, clierr.WithNext(fmt.Errorf("lab %q has no worker %d (workers: %s)", q.Project, *q.Index, strings.Join(seen, ", ")),
			clierr.Step("run '%s' to see the workers", "status"))
	}
	return WorkerContainer{}, clierr.WithNext(fmt.Errorf("no worker container has Ray node %s's address; workers seen: %s", q.IP, strings.Join(seen, "; ")),
		clierr.Step("run '%s'; is RAY_ADDRESS pointing at this host's lab?", "status"))
}
