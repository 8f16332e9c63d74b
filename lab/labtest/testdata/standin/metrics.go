package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// rayTmp is the ray-tmp volume: written by the head, read by Prometheus and Grafana.
const (
	rayTmp       = "/tmp/ray"
	dashboardUID = "rayDefaultDashboard"
)

func metricsPort(cmd string) string {
	if p := flag(cmd, "metrics-export-port"); p != "" {
		return p
	}
	return "8080"
}

func serveMetrics(port string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "# TYPE ray_node_cpu_count gauge\nray_node_cpu_count 1")
	})
	go func() { _ = http.ListenAndServe(":"+port, mux) }()
}

// writeServiceDiscovery writes what Ray's head writes for Prometheus: the
// metrics address of every alive node (file_sd format), replaced atomically.
func writeServiceDiscovery(list []*node) {
	var targets []string
	for _, n := range list {
		if n.State == "ALIVE" && n.Metrics != "" {
			targets = append(targets, n.IP+":"+n.Metrics)
		}
	}
	b, _ := json.Marshal([]map[string]any{{"labels": map[string]string{"job": "ray"}, "targets": targets}})
	tmp := rayTmp + "/.prom_sd.tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, rayTmp+"/prom_metrics_service_discovery.json")
	}
}

// writeDashboards writes one Ray dashboard where Ray's metrics module does.
func writeDashboards() {
	dir := rayTmp + "/session_latest/metrics/grafana/dashboards"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "standin head: dashboards:", err)
		return
	}
	b, _ := json.Marshal(map[string]any{"uid": dashboardUID, "title": "Default Dashboard", "panels": []any{}})
	_ = os.WriteFile(dir+"/default_grafana_dashboard.json", b, 0o644)
}

var (
	provPathRe   = regexp.MustCompile(`(?m)^\s*path:\s*['"]?([^\s'"]+)`)
	provFolderRe = regexp.MustCompile(`(?m)^\s*folder:\s*['"]?([^'"\n]+?)['"]?\s*$`)
)

// grafanaSearch lists the dashboards Grafana's provisioning files point at.
func grafanaSearch(w http.ResponseWriter, r *http.Request) {
	out := []any{}
	provs, _ := filepath.Glob("/etc/grafana/provisioning/dashboards/*.y*ml")
	for _, p := range provs {
		text := readFile(p)
		m := provPathRe.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		folder := "General"
		if f := provFolderRe.FindStringSubmatch(text); f != nil {
			folder = f[1]
		}
		files, _ := filepath.Glob(filepath.Join(m[1], "*.json"))
		for _, f := range files {
			var d struct {
				UID   string `json:"uid"`
				Title string `json:"title"`
			}
			if json.Unmarshal([]byte(readFile(f)), &d) == nil && d.UID != "" {
				out = append(out, map[string]string{"uid": d.UID, "title": d.Title, "folderTitle": folder, "type": "dash-db"})
			}
		}
	}
	writeAny(w, out)
}

// listGPUs plays nvidia-smi --query-gpu=uuid --format=csv,noheader and
// rocminfo for the GPUs in $STANDIN_GPU_UUIDS.
func listGPUs(tool string) int {
	ids := strings.FieldsFunc(os.Getenv("STANDIN_GPU_UUIDS"), func(r rune) bool { return r == ',' })
	if len(ids) == 0 {
		if tool == "nvidia-smi" {
			fmt.Println("No devices were found")
			return 6
		}
		fmt.Fprintln(os.Stderr, "ROCk module is NOT loaded, possibly no GPU devices")
		return 1
	}
	for i, id := range ids {
		if tool == "nvidia-smi" {
			fmt.Println(id)
			continue
		}
		fmt.Printf("*******\nAgent %d\n*******\n  Name:                    gfx908\n  Uuid:                    %s\n", i+2, id)
	}
	return 0
}
