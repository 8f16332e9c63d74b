package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
)

func metricsSpecs() []spec {
	return []spec{
		{id: "metrics.prometheus", group: GroupMetrics, title: "Prometheus scrapes every Ray node", run: checkPrometheus},
		{id: "metrics.grafana", group: GroupMetrics, title: "Grafana is healthy with Ray's dashboards provisioned", run: checkGrafana},
		{id: "metrics.ray", group: GroupMetrics, title: "Ray's dashboard reaches Grafana and Prometheus", run: checkRayMetrics},
	}
}

type promTarget struct {
	Labels     map[string]string `json:"labels"`
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

func targetHost(t promTarget) string {
	if u, err := url.Parse(t.ScrapeURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	if h, _, err := net.SplitHostPort(t.Labels["instance"]); err == nil {
		return h
	}
	return t.Labels["instance"]
}

// firstScrapeWait is how long the check waits for Prometheus to catch up
// with Ray: a node just up or just joined reaches Ray's service-discovery
// file within its flush period (5 s), and Prometheus scrapes a new target
// within one scrape interval (10 s); until then its health is "unknown".
var firstScrapeWait = 17 * time.Second

func promFix(c nextstep.Commands) string {
	return c.Line("logs", "prometheus") + "; the head writes the target list to /tmp/ray/prom_metrics_service_discovery.json (" + c.Line("logs", "ray-head") + ")"
}

func checkPrometheus(ctx context.Context, e *env) outcome {
	nodes, err := e.nodes()
	if err != nil {
		return failErr(fmt.Errorf("cannot tell which Ray nodes should be scraped: %w", err), e.cmd("status"))
	}
	deadline := time.Now().Add(firstScrapeWait)
	for {
		targets, err := rayTargets(ctx, e)
		if err != nil {
			return failErr(err, e.cmd("logs", "prometheus"))
		}
		out, pending := judgeTargets(targets, nodes, e.o.Commands)
		if !pending || time.Now().After(deadline) {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(time.Second):
		}
	}
}

// judgeTargets says whether every alive node has an 'up' target; pending:
// Prometheus may not have caught up yet (a target not scraped yet, an
// alive node not listed yet).
func judgeTargets(targets []promTarget, nodes []ray.Node, c nextstep.Commands) (out outcome, pending bool) {
	upHosts, listed := map[string]bool{}, map[string]bool{}
	var down []string
	for _, t := range targets {
		listed[targetHost(t)] = true
		switch t.Health {
		case "up":
			upHosts[targetHost(t)] = true
		case "unknown":
			pending = true
			down = append(down, fmt.Sprintf("%s not scraped yet", t.ScrapeURL))
		default:
			down = append(down, fmt.Sprintf("%s %s (%s)", t.ScrapeURL, t.Health, firstLine(t.LastError)))
		}
	}
	if len(targets) == 0 {
		return fail(promFix(c), "Prometheus has no active target of job 'ray': it does not read Ray's service-discovery file"), true
	}
	var unscraped, scraped []string
	for _, nd := range nodes {
		if !nd.Alive() {
			continue
		}
		if upHosts[nd.NodeIP] {
			scraped = append(scraped, nd.NodeIP)
			continue
		}
		unscraped = append(unscraped, nd.NodeIP)
		if !listed[nd.NodeIP] {
			pending = true
		}
	}
	sort.Strings(scraped)
	sort.Strings(unscraped)
	if len(unscraped) > 0 {
		msg := fmt.Sprintf("no 'up' Ray target for alive node(s) %s (%d ray targets", strings.Join(unscraped, ", "), len(targets))
		if len(down) > 0 {
			msg += "; down: " + strings.Join(down, ", ")
		}
		return fail(promFix(c), "%s)", msg), pending
	}
	ev := fmt.Sprintf("%d Ray targets; every alive node is scraped and up: %s", len(targets), strings.Join(scraped, ", "))
	if len(down) > 0 {
		ev += fmt.Sprintf("; %d stale target(s) of gone nodes down", len(down))
	}
	return pass("%s", ev), false
}

// rayTargets are Prometheus's active targets of job "ray".
func rayTargets(ctx context.Context, e *env) ([]promTarget, error) {
	u := strings.TrimRight(e.d.State.Probes.Prometheus, "/") + "/api/v1/targets?state=active"
	var out struct {
		Status string `json:"status"`
		Data   struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if err := e.getJSON(ctx, u, nil, &out); err != nil {
		return nil, err
	}
	var ray []promTarget
	for _, t := range out.Data.ActiveTargets {
		if t.Labels["job"] == "ray" || t.ScrapePool == "ray" {
			ray = append(ray, t)
		}
	}
	return ray, nil
}

type grafanaDash struct {
	UID         string `json:"uid"`
	Title       string `json:"title"`
	FolderTitle string `json:"folderTitle"`
	Type        string `json:"type"`
}

// searchDashboards lists Grafana's dashboards as a student (anonymous
// viewer) sees them; the admin login is the fallback when anonymous access
// was turned off.
func (e *env) searchDashboards(ctx context.Context) ([]grafanaDash, error) {
	u := strings.TrimRight(e.d.State.Probes.Grafana, "/") + "/api/search?type=dash-db&limit=5000"
	code, body, err := e.get(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	if code == http.StatusUnauthorized {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.SetBasicAuth(plan.GrafanaAdminUser, e.d.Creds.GrafanaAdminPassword)
		if code, body, err = e.get(ctx, u, req.Header); err != nil {
			return nil, err
		}
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", u, code, firstLine(string(body)))
	}
	var ds []grafanaDash
	if err := json.Unmarshal(body, &ds); err != nil {
		return nil, fmt.Errorf("GET %s: unexpected answer (%v): %.200s", u, err, body)
	}
	return ds, nil
}

func rayDashboards(ds []grafanaDash) []grafanaDash {
	var out []grafanaDash
	for _, d := range ds {
		if d.FolderTitle == "Ray" {
			out = append(out, d)
		}
	}
	return out
}

func checkGrafana(ctx context.Context, e *env) outcome {
	base := strings.TrimRight(e.d.State.Probes.Grafana, "/")
	var health struct {
		Database string `json:"database"`
		Version  string `json:"version"`
	}
	if err := e.getJSON(ctx, base+"/api/health", nil, &health); err != nil {
		return failErr(err, e.cmd("logs", "grafana"))
	}
	if health.Database != "ok" {
		return fail(e.cmd("logs", "grafana"), "Grafana /api/health says database %q", health.Database)
	}
	prov := "provisioning file not checked (no state dir)"
	if e.d.StateDir != "" {
		p := e.d.StateDir.File(render.GrafanaDashboards)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fail(e.cmd("up")+" (it writes the provisioning files)", "Grafana's dashboard provisioning file %s is missing", p)
			}
			return failErr(err, e.cmd("up"))
		}
		prov = "provisioned by " + render.GrafanaDashboards
	}
	ds, err := e.dashboards()
	if err != nil {
		return failErr(err, e.cmd("logs", "grafana"))
	}
	ray := rayDashboards(ds)
	if len(ray) == 0 {
		return fail(e.cmd("logs", "grafana")+"; the head writes the dashboards under /tmp/ray/session_latest/metrics/grafana/dashboards ("+e.cmd("logs", "ray-head")+")",
			"Grafana %s is healthy but has no dashboard in folder 'Ray' (%d dashboards in all)", health.Version, len(ds))
	}
	titles := make([]string, len(ray))
	for i, d := range ray {
		titles[i] = d.Title
	}
	sort.Strings(titles)
	return pass("Grafana %s healthy; folder Ray holds %d dashboards (%s); %s", health.Version, len(ray), strings.Join(titles, ", "), prov)
}

func checkRayMetrics(ctx context.Context, e *env) outcome {
	base := strings.TrimRight(e.d.State.Probes.Ray, "/")
	var gh struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			GrafanaHost   string            `json:"grafanaHost"`
			SessionName   string            `json:"sessionName"`
			DashboardUids map[string]string `json:"dashboardUids"`
		} `json:"data"`
	}
	fix := e.cmd("logs", "ray-head") + "; the head reaches Grafana at RAY_GRAFANA_HOST and Prometheus at RAY_PROMETHEUS_HOST"
	if err := e.getJSON(ctx, base+"/api/grafana_health", e.rayToken(), &gh); err != nil {
		return failErr(err, fix)
	}
	if !gh.Result {
		return fail(fix, "Ray's /api/grafana_health: %s", gh.Msg)
	}
	var ph struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
	}
	if err := e.getJSON(ctx, base+"/api/prometheus_health", e.rayToken(), &ph); err != nil {
		return failErr(err, fix)
	}
	if !ph.Result {
		return fail(fix, "Ray's /api/prometheus_health: %s", ph.Msg)
	}
	ev := fmt.Sprintf("Ray reaches Grafana at %s (%s) and Prometheus (%s)", gh.Data.GrafanaHost, gh.Msg, ph.Msg)
	// The dashboards Ray's metrics tab embeds must be the ones Grafana has.
	def := gh.Data.DashboardUids["default"]
	if def == "" {
		return pass("%s", ev)
	}
	ds, err := e.dashboards()
	if err != nil {
		return failErr(err, e.cmd("logs", "grafana"))
	}
	for _, d := range ds {
		if d.UID == def {
			return pass("%s; its default dashboard %q is in Grafana (%q)", ev, def, d.Title)
		}
	}
	return fail(e.cmd("logs", "grafana")+"; Grafana must provision the dashboards the head wrote in this session",
		"%s, but Grafana has no dashboard with uid %q, which Ray's metrics tab embeds", ev, def)
}
