package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/ready"
)

// scrapesReady is up's Prometheus check: no ALIVE Ray node whose every Ray
// target Prometheus scraped last as down. verify's metrics.prometheus
// waits for targets not scraped yet, but fails at once on a down one; a
// worker recreated at its old address is down there until the next scrape
// (one interval, 10 s), so up waits for that scrape. A node not listed yet,
// or only not scraped yet, does not hold up up: verify waits for those.
func scrapesReady(c *ray.Client, prometheus string) ready.Check {
	return ready.Check{Name: "metrics", Run: func(ctx context.Context) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		nodes, err := c.Nodes(rctx)
		if err != nil {
			return "", err
		}
		targets, err := rayTargets(rctx, prometheus)
		if err != nil {
			return "", err
		}
		return judgeScrapes(nodes, targets)
	}}
}

// promTarget is one of Prometheus's active targets (GET /api/v1/targets).
type promTarget struct {
	Labels     map[string]string `json:"labels"`
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"` // up, down, unknown
	LastError  string            `json:"lastError"`
}

func (t promTarget) host() string {
	if u, err := url.Parse(t.ScrapeURL); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	if h, _, err := net.SplitHostPort(t.Labels["instance"]); err == nil {
		return h
	}
	return t.Labels["instance"]
}

// rayTargets are Prometheus's active targets of job "ray".
func rayTargets(ctx context.Context, prometheus string) ([]promTarget, error) {
	u := strings.TrimRight(prometheus, "/") + "/api/v1/targets?state=active"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	var out struct {
		Data struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET %s: unexpected answer: %w", u, err)
	}
	var rt []promTarget
	for _, t := range out.Data.ActiveTargets {
		if t.Labels["job"] == "ray" || t.ScrapePool == "ray" {
			rt = append(rt, t)
		}
	}
	return rt, nil
}

// judgeScrapes passes unless an ALIVE node's Ray targets are all down.
func judgeScrapes(nodes []ray.Node, targets []promTarget) (string, error) {
	health := map[string][]promTarget{}
	for _, t := range targets {
		health[t.host()] = append(health[t.host()], t)
	}
	var down []string
	scraped, seen := 0, map[string]bool{}
	for _, n := range nodes {
		ts := health[n.NodeIP]
		if !n.Alive() || len(ts) == 0 || seen[n.NodeIP] {
			continue
		}
		seen[n.NodeIP] = true
		allDown := true
		for _, t := range ts {
			allDown = allDown && t.Health == "down"
		}
		if allDown {
			down = append(down, fmt.Sprintf("%s (%s)", ts[0].ScrapeURL, firstLine(ts[0].LastError)))
		} else {
			scraped++
		}
	}
	if len(down) > 0 {
		sort.Strings(down)
		return "", fmt.Errorf("the last scrape of ALIVE Ray node(s) failed: %s; waiting for Prometheus's next", strings.Join(down, ", "))
	}
	return fmt.Sprintf("%d ALIVE node(s) listed, none scraped down (%d Ray targets)", scraped, len(targets)), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
