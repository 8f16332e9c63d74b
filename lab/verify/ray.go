package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

func raySpecs() []spec {
	return []spec{
		{id: "ray.nodes", group: GroupRay, title: "Ray has 1 head and one ALIVE node per worker", run: checkNodes},
		{id: "ray.auth", group: GroupRay, title: "Ray's token authentication is on", run: checkAuth},
	}
}

// get fetches url from this host; the body is cut at 4 MiB.
func (e *env) get(ctx context.Context, url string, header http.Header) (int, []byte, error) {
	if e.d.HTTP == nil {
		return 0, nil, fmt.Errorf("no HTTP client configured")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.d.HTTP.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s: read answer: %w", url, err)
	}
	return resp.StatusCode, b, nil
}

// getJSON fetches url and decodes a 200 answer into out.
func (e *env) getJSON(ctx context.Context, url string, header http.Header, out any) error {
	code, b, err := e.get(ctx, url, header)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, code, firstLine(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("GET %s: unexpected answer (%v): %.200s", url, err, b)
	}
	return nil
}

func (e *env) rayToken() http.Header {
	return http.Header{"Authorization": {"Bearer " + e.d.Creds.RayAuthToken}}
}

// workerNodes pairs the plan's worker containers with Ray's nodes
// (status.MatchWorkerNodes): a stopped worker's node that Ray still lists
// ALIVE is its own, not a healthy worker.
func (e *env) workerNodes(cs map[string]docker.ContainerDetails, nodes []ray.Node) (map[string]status.WorkerNode, []ray.Node) {
	ws := map[string]status.WorkerContainer{}
	for _, w := range e.plan.Workers {
		if d, ok := cs[w.Service]; ok {
			ws[w.Service] = status.WorkerContainer{Index: w.Index, Project: e.d.State.Project, ContainerDetails: d}
		}
	}
	pairs, unpaired := status.MatchWorkerNodes(ws, nodes, e.plan.NodeIP)
	out := map[string]status.WorkerNode{}
	for _, p := range pairs {
		out[p.Service] = p
	}
	return out, unpaired
}

func checkNodes(ctx context.Context, e *env) outcome {
	nodes, err := e.nodes()
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	cs, err := e.containers()
	if err != nil {
		return failErr(fmt.Errorf("cannot put Ray's nodes beside the containers: %w", err), e.cmd("doctor"))
	}
	pairs, unpaired := e.workerNodes(cs, nodes)
	heads, dead := 0, 0
	var alive []string
	for _, n := range nodes {
		switch {
		case !n.Alive():
			dead++
		case n.IsHeadNode:
			heads++
			alive = append(alive, "head "+n.NodeIP)
		}
	}
	var problems, fixes []string
	lost := lostHead(pairs, cs[service.HeadService])
	if len(lost) > 0 {
		problems = append(problems, status.LostHeadNote(lost, cs[service.HeadService], time.Now(), e.cmd("up")))
		fixes = appendOnce(fixes, e.cmd("up"))
	}
	for _, w := range e.plan.Workers {
		p, ok := pairs[w.Service]
		switch {
		case slices.ContainsFunc(lost, func(l status.WorkerNode) bool { return l.Service == w.Service }):
			// Said above.
		case !ok:
			problems = append(problems, w.Service+": no container")
			fixes = appendOnce(fixes, e.cmd("up"))
		case p.Stale:
			problems = append(problems, status.StaleNote(p, time.Now()))
			fixes = appendOnce(fixes, e.cmd("worker", "start", fmt.Sprint(w.Index)))
		case !p.Running:
			problems = append(problems, fmt.Sprintf("%s: container %s; Ray lists no ALIVE node for it", w.Service, p.State))
			fixes = appendOnce(fixes, e.cmd("worker", "start", fmt.Sprint(w.Index)))
		case p.RayState != "ALIVE":
			problems = append(problems, fmt.Sprintf("%s: running, but Ray lists no ALIVE node at its address %s", w.Service, p.IP))
			fixes = appendOnce(fixes, e.cmd("logs", w.Service))
		default:
			alive = append(alive, w.Service+" "+p.IP)
		}
	}
	for _, n := range unpaired {
		problems = append(problems, fmt.Sprintf("Ray lists an ALIVE worker node at %s that no worker container of this lab has", n.NodeIP))
		fixes = appendOnce(fixes, e.cmd("status"))
	}
	if heads != 1 {
		problems = append(problems, fmt.Sprintf("%d ALIVE head node(s), expected 1", heads))
		fixes = appendOnce(fixes, e.cmd("logs", "ray-head"))
	}
	sort.Strings(alive)
	evidence := fmt.Sprintf("%d head + %d worker node(s) ALIVE with their containers running (%s)", heads, len(alive)-heads, strings.Join(alive, ", "))
	if joined := joinedHosts(nodes, e.plan.NodeIP); joined != "" {
		evidence += "; " + joined
	}
	if dead > 0 {
		evidence += fmt.Sprintf("; %d DEAD (earlier nodes Ray keeps listing)", dead)
	}
	if len(problems) == 0 {
		return pass("%s; %d planned", evidence, len(e.plan.Workers))
	}
	return fail(strings.Join(fixes, "; "), "%s; expected 1 head + %d workers: %s", evidence, len(e.plan.Workers), strings.Join(problems, "; "))
}

// lostHead are the running workers a restarted head does not know.
func lostHead(pairs map[string]status.WorkerNode, head docker.ContainerDetails) []status.WorkerNode {
	ps := make([]status.WorkerNode, 0, len(pairs))
	for _, p := range pairs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Service < ps[j].Service })
	return status.LostHead(ps, head)
}

func appendOnce(s []string, v string) []string {
	if contains(s, v) {
		return s
	}
	return append(s, v)
}

func (e *env) authFix() string {
	return e.cmd("down") + " && " + e.cmd("up") + " (the head must run with RAY_AUTH_MODE=token; a compose.override.yaml may have turned it off)"
}

func checkAuth(ctx context.Context, e *env) outcome {
	// The job list, not /api/version: it is what an intruder would use, and
	// Ray may leave version or login routes open to let its UI ask for a token.
	url := strings.TrimRight(e.d.State.Probes.Ray, "/") + "/api/jobs/"
	code, body, err := e.get(ctx, url, nil)
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	if code != http.StatusUnauthorized {
		if code == http.StatusOK {
			return fail(e.authFix(), "GET %s without a token answered 200: anyone who reaches port %d can list and submit jobs", url, e.plan.Ports[service.PortDashboard])
		}
		return fail(e.cmd("status"), "GET %s without a token answered HTTP %d (%s), expected 401", url, code, firstLine(string(body)))
	}
	wrong, wbody, err := e.get(ctx, url, http.Header{"Authorization": {"Bearer not-the-lab-token"}})
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	if wrong != http.StatusForbidden && wrong != http.StatusUnauthorized {
		return fail(e.authFix(), "GET %s with a wrong token answered HTTP %d (%s), expected 403", url, wrong, firstLine(string(wbody)))
	}
	return pass("GET /api/jobs/: no token -> 401 (%s); wrong token -> %d", firstLine(string(body)), wrong)
}

// joinedHosts says which nodes other hosts run (mltrain join), and which
// joined hosts are gone (every node of theirs DEAD); "" on a one-host lab.
func joinedHosts(nodes []ray.Node, nodeIP string) string {
	if nodeIP == "" {
		return ""
	}
	alive, dead := map[string][]string{}, map[string]bool{}
	for _, n := range nodes {
		if n.NodeIP == nodeIP || n.IsHeadNode {
			continue
		}
		if n.Alive() {
			alive[n.NodeIP] = append(alive[n.NodeIP], fmt.Sprintf("%s %g GPU", n.Labels[labels.RayNodeService], n.GPUs()))
		} else {
			dead[n.NodeIP] = true
		}
	}
	var out []string
	for ip, ns := range alive {
		sort.Strings(ns)
		out = append(out, fmt.Sprintf("joined host %s: %s", ip, strings.Join(ns, ", ")))
	}
	for ip := range dead {
		if len(alive[ip]) == 0 {
			out = append(out, fmt.Sprintf("joined host %s left (its nodes are DEAD)", ip))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
