package ray

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Node is one Ray node as the State API lists it.
type Node struct {
	NodeID         string             `json:"node_id"`
	NodeIP         string             `json:"node_ip"`
	IsHeadNode     bool               `json:"is_head_node"`
	State          string             `json:"state"` // ALIVE or DEAD
	StateMessage   string             `json:"state_message"`
	NodeName       string             `json:"node_name"`
	ResourcesTotal map[string]float64 `json:"resources_total"`
	Labels         map[string]string  `json:"labels"`
}

// Alive reports whether the node is up.
func (n Node) Alive() bool { return n.State == "ALIVE" }

// GPUs is the node's total GPU resource.
func (n Node) GPUs() float64 { return n.ResourcesTotal["GPU"] }

// Nodes lists the cluster's nodes, dead ones included (GET /api/v0/nodes).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			Result struct {
				Total  int    `json:"total"`
				Result []Node `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := c.getJSON(ctx, "/api/v0/nodes?limit=10000&detail=false", &out); err != nil {
		return nil, fmt.Errorf("list Ray nodes: %w", err)
	}
	if !out.Result {
		return nil, fmt.Errorf("list Ray nodes: the dashboard answered result=false: %s", out.Msg)
	}
	return out.Data.Result.Result, nil
}

// ClusterStatus returns the autoscaler's status text (what `ray status`
// prints), from GET /api/cluster_status?format=1.
func (c *Client) ClusterStatus(ctx context.Context) (string, error) {
	var out struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			ClusterStatus string `json:"clusterStatus"`
		} `json:"data"`
	}
	if err := c.getJSON(ctx, "/api/cluster_status?format=1", &out); err != nil {
		return "", fmt.Errorf("cluster status: %w", err)
	}
	if !out.Result {
		return "", fmt.Errorf("cluster status: the dashboard answered result=false: %s", out.Msg)
	}
	return out.Data.ClusterStatus, nil
}

// DemandKind says what is waiting for resources.
type DemandKind string

const (
	DemandTasks           DemandKind = "tasks/actors"
	DemandPlacementGroups DemandKind = "placement groups"
	DemandRequested       DemandKind = "request_resources"
)

// Demand is one line of pending resource demand in the cluster status.
type Demand struct {
	Kind      DemandKind           `json:"kind"`
	Bundles   []map[string]float64 `json:"bundles"` // one for tasks/actors; a placement group's bundles
	Count     int                  `json:"count"`   // the N in "N+ pending"
	Strategy  string               `json:"strategy,omitempty"`
	Section   string               `json:"section"` // header it was under: "Demands" (v1) or "Pending Demands" (v2)...
	Line      string               `json:"line"`
	AtLeast   bool                 `json:"at_least"` // "N+": Ray caps its count
	Resources map[string]float64   `json:"resources"`
}

var (
	demandLine = regexp.MustCompile(`^\s*(.*?):\s*(\d+)(\+?)\s+(pending tasks/actors|pending placement groups|from request_resources\(\))`)
	bundleRe   = regexp.MustCompile(`\{[^{}]*\}`)
	multRe     = regexp.MustCompile(`\*\s*(\d+)`)
	strategyRe = regexp.MustCompile(`\(([A-Z_]+)\)\s*$`)
	resRe      = regexp.MustCompile(`'([^']+)':\s*([0-9.eE+-]+)`)
)

// ParseDemands reads the pending demands out of a cluster status text. It
// understands both autoscaler header styles: v1 ("Usage:", "Demands:") and v2
// ("Total Usage:", "From request_resources:", "Pending Demands:"); the demand
// lines themselves have the same shape in both.
func ParseDemands(status string) []Demand {
	var out []Demand
	section := ""
	for _, raw := range strings.Split(status, "\n") {
		line := strings.TrimRight(raw, " \r")
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		if !isDemandSection(section) {
			continue
		}
		m := demandLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d := Demand{Section: section, Line: strings.TrimSpace(line), AtLeast: m[3] == "+"}
		d.Count, _ = strconv.Atoi(m[2])
		switch m[4] {
		case "pending tasks/actors":
			d.Kind = DemandTasks
		case "pending placement groups":
			d.Kind = DemandPlacementGroups
		default:
			d.Kind = DemandRequested
		}
		spec := m[1]
		if sm := strategyRe.FindStringSubmatch(spec); sm != nil {
			d.Strategy = sm[1]
		}
		mult := 1
		if mm := multRe.FindStringSubmatch(spec); mm != nil {
			mult, _ = strconv.Atoi(mm[1])
		}
		for _, b := range bundleRe.FindAllString(spec, -1) {
			res := parseResources(b)
			for i := 0; i < mult; i++ {
				d.Bundles = append(d.Bundles, res)
			}
		}
		d.Resources = map[string]float64{}
		for _, b := range d.Bundles {
			for k, v := range b {
				d.Resources[k] += v
			}
		}
		out = append(out, d)
	}
	return out
}

func isDemandSection(s string) bool {
	s = strings.TrimPrefix(strings.TrimSpace(s), "Total ")
	switch s {
	case "Demands", "Pending Demands", "From request_resources":
		return true
	}
	return false
}

func parseResources(b string) map[string]float64 {
	res := map[string]float64{}
	for _, m := range resRe.FindAllStringSubmatch(b, -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			res[m[1]] = v
		}
	}
	return res
}

// FindDemand returns the first task/actor demand asking one bundle for at
// least the given resources (e.g. {"GPU": 2}).
func FindDemand(ds []Demand, want map[string]float64) (Demand, bool) {
	for _, d := range ds {
		for _, b := range d.Bundles {
			ok := true
			for k, v := range want {
				if b[k] < v {
					ok = false
					break
				}
			}
			if ok {
				return d, true
			}
		}
	}
	return Demand{}, false
}

// MaxGPUsPerNode is the most GPUs any alive node has, and which node.
func MaxGPUsPerNode(nodes []Node) (float64, Node) {
	var best Node
	max := 0.0
	alive := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Alive() {
			alive = append(alive, n)
		}
	}
	sort.Slice(alive, func(i, j int) bool { return alive[i].NodeIP < alive[j].NodeIP })
	for _, n := range alive {
		if n.GPUs() > max {
			max, best = n.GPUs(), n
		}
	}
	return max, best
}
