package verify

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

func jupyterSpecs() []spec {
	return []spec{
		{id: "jupyter.api", group: GroupJupyter, title: "Jupyter answers with the lab's token", run: checkJupyterAPI},
		{id: "jupyter.ray-address", group: GroupJupyter, title: "RAY_ADDRESS and the Ray token are set in Jupyter", run: checkJupyterEnv},
	}
}

func checkJupyterAPI(ctx context.Context, e *env) outcome {
	u := strings.TrimRight(e.d.State.Probes.Jupyter, "/") + "/api"
	var v struct {
		Version string `json:"version"`
	}
	if err := e.getJSON(ctx, u, http.Header{"Authorization": {"token " + e.d.Creds.JupyterToken}}, &v); err != nil {
		return failErr(err, e.cmd("logs", "jupyter"))
	}
	if v.Version == "" {
		return fail(e.cmd("logs", "jupyter"), "GET %s answered without a Jupyter server version", u)
	}
	return pass("Jupyter Server %s answers at %s (students open %s)", v.Version, u, e.d.State.URLs[service.PageJupyter])
}

func checkJupyterEnv(ctx context.Context, e *env) outcome {
	cs, err := e.containers()
	if err != nil {
		return failErr(err, e.cmd("doctor"))
	}
	d, ok := cs[service.JupyterService]
	if !ok {
		return fail(e.cmd("up"), "lab %q has no jupyter container", e.d.State.Project)
	}
	fix := "remove the override of RAY_ADDRESS/RAY_AUTH_TOKEN from compose.override.yaml, then " + e.cmd("up")
	addr, ok := envValue(d.Env, ray.EnvAddress)
	if !ok || addr == "" {
		return fail(fix, "container %s has no %s: notebooks cannot find the cluster", d.Name, ray.EnvAddress)
	}
	u, err := ray.ParseAddress(addr)
	if err != nil {
		return fail(fix, "container %s has %s=%q: %v", d.Name, ray.EnvAddress, addr, err)
	}
	if !jupyterReachesHead(u, e.plan) {
		return fail(fix, "container %s has %s=%s, which is not the lab's head (%s)", d.Name, ray.EnvAddress, addr, e.plan.JupyterRayAddress())
	}
	tok, _ := envValue(d.Env, ray.EnvToken)
	if tok != e.d.Creds.RayAuthToken {
		what := "is not set"
		if tok != "" {
			what = "is not the lab's token"
		}
		return fail(fix, "container %s has %s=%s, but %s %s: job submissions would get 401/403", d.Name, ray.EnvAddress, addr, ray.EnvToken, what)
	}
	return pass("container %s: %s=%s, %s is the lab's token", d.Name, ray.EnvAddress, addr, ray.EnvToken)
}

// jupyterReachesHead says whether u is the head's dashboard as Jupyter
// reaches it: by the head's name on the lab's network, or, when Ray's nodes
// are on the host network (a lab that accepts joins), at the host's address
// and the dashboard's pinned port, as up renders it.
func jupyterReachesHead(u *url.URL, p plan.Plan) bool {
	if p.Network == plan.NetworkHost {
		want, err := url.Parse(p.JupyterRayAddress())
		return err == nil && u.Host == want.Host
	}
	h := u.Hostname()
	return h == service.HeadService || h == p.Head.Container
}
