package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/plan"
)

func containerSpecs(p plan.Plan) []spec {
	var out []spec
	for _, svc := range p.Services() {
		out = append(out, spec{id: GroupContainers + "." + svc, group: GroupContainers,
			title: svc + " is running and healthy",
			run:   func(ctx context.Context, e *env) outcome { return checkContainer(e, svc) }})
	}
	return out
}

func (e *env) readContainers(ctx context.Context) (map[string]docker.ContainerDetails, error) {
	if e.d.Engine == nil {
		return nil, fmt.Errorf("no Docker engine configured")
	}
	list, err := e.d.Engine.ContainerList(ctx, map[string]string{labels.Project: e.d.State.Project})
	if err != nil {
		return nil, fmt.Errorf("list the lab's containers: %w", err)
	}
	out := map[string]docker.ContainerDetails{}
	for _, c := range list {
		d, err := e.d.Engine.ContainerInspect(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("inspect container %s: %w", c.Name, err)
		}
		out[c.Labels[labels.Service]] = d
	}
	return out, nil
}

// startFix is how to get a service running again.
func (e *env) startFix(svc string) string {
	for _, w := range e.plan.Workers {
		if w.Service == svc {
			return e.cmd("worker", "start", fmt.Sprint(w.Index))
		}
	}
	return e.cmd("up")
}

func checkContainer(e *env, svc string) outcome {
	cs, err := e.containers()
	if err != nil {
		return failErr(err, e.cmd("doctor"))
	}
	d, ok := cs[svc]
	if !ok {
		return fail(e.cmd("up"), "lab %q has no %s container", e.d.State.Project, svc)
	}
	switch {
	case !d.Running:
		why := d.State
		if d.ExitCode != 0 {
			why += fmt.Sprintf(" with code %d", d.ExitCode)
		}
		if d.OOMKilled {
			why += " (killed: out of memory)"
		}
		return fail(e.startFix(svc)+" (logs: '"+e.cmd("logs", svc)+"')", "container %s is %s", d.Name, why)
	case d.Health == "unhealthy":
		return fail(e.cmd("logs", svc)+", then "+e.cmd("up"), "container %s is running but its healthcheck fails (unhealthy)", d.Name)
	case d.Health == "starting":
		return fail("wait until '"+e.cmd("status")+"' shows it healthy, then run '"+e.cmd("verify")+"' again",
			"container %s is running but not healthy yet (health: starting)", d.Name)
	}
	health := d.Health
	if health == "" {
		health = "no healthcheck"
	}
	return pass("container %s running, %s, image %s", d.Name, health, shortImage(d.Image))
}

func shortImage(img string) string {
	if i := strings.LastIndex(img, "/"); i >= 0 && strings.Count(img, "/") > 1 {
		return img[i+1:]
	}
	return img
}
