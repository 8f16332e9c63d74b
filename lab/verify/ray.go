package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/mltrain/mltrain/lab"
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

func checkNodes(ctx context.Context, e *env) outcome {
	nodes, err := e.nodes()
	if err != nil {
		return failErr(err, "mltrain status")
	}
	cs, _ := e.containers() // names and states only: best effort
	names := workerIPs(e.plan, cs)
	heads, workers := 0, 0
	aliveIP := map[string]bool{}
	var alive []string
	dead := 0
	for _, n := range nodes {
		if !n.Alive() {
			dead++
			continue
		}
		aliveIP[n.NodeIP] = true
		if n.IsHeadNode {
			heads++
			alive = append(alive, "head "+n.NodeIP)
			continue
		}
		workers++
		if s, ok := names[n.NodeIP]; ok {
			alive = append(alive, s+" "+n.NodeIP)
		} else {
			alive = append(alive, "worker "+n.NodeIP)
		}
	}
	sort.Strings(alive)
	want := len(e.plan.Workers)
	evidence := fmt.Sprintf("%d head + %d worker node(s) ALIVE (%s)", heads, workers, strings.Join(alive, ", "))
	if dead > 0 {
		evidence += fmt.Sprintf("; %d DEAD (earlier nodes Ray keeps listing)", dead)
	}
	if heads == 1 && workers == want {
		return pass("%s; %d planned", evidence, want)
	}
	// Name the workers with no ALIVE node, and how to bring each back.
	var missing, fixes []string
	for _, w := range e.plan.Workers {
		d, ok := cs[w.Service]
		switch {
		case !ok:
			missing = append(missing, w.Service+" (no container)")
			fixes = appendOnce(fixes, "mltrain up")
		case !d.Running:
			missing = append(missing, w.Service+" ("+d.State+")")
			fixes = appendOnce(fixes, fmt.Sprintf("mltrain worker start %d", w.Index))
		default:
			found := false
			for _, ip := range d.Networks {
				found = found || aliveIP[ip]
			}
			if !found {
				missing = append(missing, w.Service+" (running, not in Ray)")
				fixes = appendOnce(fixes, "mltrain logs "+w.Service)
			}
		}
	}
	if heads != 1 {
		fixes = appendOnce(fixes, "mltrain logs ray-head")
	}
	if len(fixes) == 0 {
		fixes = []string{"mltrain status"}
	}
	msg := fmt.Sprintf("%s; expected 1 head + %d workers", evidence, want)
	if len(missing) > 0 {
		msg += "; no ALIVE node for " + strings.Join(missing, ", ")
	}
	return fail(strings.Join(fixes, "; "), "%s", msg)
}

func appendOnce(s []string, v string) []string {
	if contains(s, v) {
		return s
	}
	return append(s, v)
}

const authFix = "mltrain down && mltrain up (the head must run with RAY_AUTH_MODE=token; a compose.override.yaml may have turned it off)"

func checkAuth(ctx context.Context, e *env) outcome {
	// The job list, not /api/version: it is what an intruder would use, and
	// Ray may leave version or login routes open to let its UI ask for a token.
	url := strings.TrimRight(e.d.State.Probes.Ray, "/") + "/api/jobs/"
	code, body, err := e.get(ctx, url, nil)
	if err != nil {
		return failErr(err, "mltrain status")
	}
	if code != http.StatusUnauthorized {
		if code == http.StatusOK {
			return fail(authFix, "GET %s without a token answered 200: anyone who reaches port %d can list and submit jobs", url, e.plan.Ports[lab.PortDashboard])
		}
		return fail("mltrain status", "GET %s without a token answered HTTP %d (%s), expected 401", url, code, firstLine(string(body)))
	}
	wrong, wbody, err := e.get(ctx, url, http.Header{"Authorization": {"Bearer not-the-lab-token"}})
	if err != nil {
		return failErr(err, "mltrain status")
	}
	if wrong != http.StatusForbidden && wrong != http.StatusUnauthorized {
		return fail(authFix, "GET %s with a wrong token answered HTTP %d (%s), expected 403", url, wrong, firstLine(string(wbody)))
	}
	return pass("GET /api/jobs/: no token -> 401 (%s); wrong token -> %d", firstLine(string(body)), wrong)
}
