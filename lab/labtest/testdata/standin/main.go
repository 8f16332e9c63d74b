// standin is a TEST FIXTURE, never shipped: one static binary that plays the
// lab's services in FROM-scratch images so `mltrain up` can be tested on an
// engine with no registry. Its role comes from /standin-role in the image.
//
//	ray-head:   `ray start --head ...`: a Ray-like dashboard (/api/version,
//	            /api/v0/nodes, token auth) and a registration port for workers.
//	ray-worker: `ray start --address=HOST:PORT --num-gpus=G --num-cpus=C`:
//	            registers with the head every second until SIGTERM.
//	grafana, prometheus, jupyter: their health endpoints.
//
// For `mltrain verify` the stand-ins also play what it reads: Ray nodes serve
// /metrics on --metrics-export-port and the head writes Prometheus's
// service-discovery file and a Grafana dashboard into /tmp/ray (the shared
// ray-tmp volume) and answers /api/grafana_health, /api/prometheus_health and
// /api/jobs/; Prometheus reports those targets up or down by scraping them;
// Grafana lists the dashboards its provisioning files point at; and
// `nvidia-smi --query-gpu=uuid ...` / `rocminfo` print the UUIDs in
// $STANDIN_GPU_UUIDS (comma-separated), as a worker given those GPUs would.
//
// Any healthcheck command that names an http URL (curl, wget, sh -c "...")
// is answered by GETting that URL; otherwise it succeeds when the role's own
// port answers.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	role := strings.TrimSpace(readFile("/standin-role"))
	args := os.Args[1:]
	self := filepath.Base(os.Args[0])
	if self != "app" && self != "standin" {
		args = append([]string{self}, args...) // called through a symlink-like copy: curl, sh, ray...
	}
	joined := strings.Join(args, " ")
	switch {
	case len(args) > 0 && (args[0] == "nvidia-smi" || args[0] == "rocminfo"):
		os.Exit(listGPUs(args[0]))
	case isHealthcheck(args):
		os.Exit(healthcheck(role, joined))
	case strings.Contains(joined, "ray start") && strings.Contains(joined, "--head"):
		runHead(joined)
	case strings.Contains(joined, "ray start"):
		runWorker(joined)
	case role == "grafana":
		serve(":3000", map[string]any{"/api/health": map[string]string{"database": "ok", "version": "standin"},
			"/api/search": http.HandlerFunc(grafanaSearch)})
	case role == "prometheus":
		serve(":9090", map[string]any{"/-/ready": "Prometheus Server is Ready.", "/-/healthy": "Prometheus Server is Healthy.",
			"/api/v1/targets": http.HandlerFunc(promTargets)})
	case role == "jupyter":
		serve(":8888", map[string]any{"/api": map[string]string{"version": "2.14.0"}})
	default:
		fmt.Println("standin: idle as", role, args)
		waitSignal()
	}
}

func isHealthcheck(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "curl", "wget", "sh", "bash", "health", "python", "python3", "mc":
		return true
	case "ray":
		return len(args) > 1 && args[1] == "health-check"
	case "/app":
		return len(args) > 1 && args[1] == "health"
	}
	return false
}

var urlRe = regexp.MustCompile(`https?://[^\s'"]+`)

func healthcheck(role, cmd string) int {
	url := urlRe.FindString(cmd)
	if addr := flag(cmd, "address"); url == "" && addr != "" {
		url = "http://" + addr + "/" // a worker's check: can it reach the head?
	}
	if url == "" {
		port := map[string]string{"ray": "8265", "grafana": "3000", "prometheus": "9090", "jupyter": "8888", "minio": "9000/minio/health/ready"}[role]
		if port == "" {
			return 0 // workers: alive is healthy
		}
		url = "http://127.0.0.1:" + port + "/"
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin healthcheck:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return 1
	}
	return 0
}

func serve(addr string, routes map[string]any) {
	mux := http.NewServeMux()
	for path, body := range routes {
		if h, ok := body.(http.HandlerFunc); ok {
			mux.HandleFunc(path, h)
			continue
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { writeAny(w, body) })
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "standin") })
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			fmt.Fprintln(os.Stderr, "standin:", err)
			os.Exit(1)
		}
	}()
	fmt.Println("standin serving on", addr)
	waitSignal()
}

func writeAny(w http.ResponseWriter, body any) {
	if s, ok := body.(string); ok {
		fmt.Fprintln(w, s)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func waitSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Println("standin: stopping on signal")
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func flag(cmd, name string) string {
	re := regexp.MustCompile(`--` + name + `[= ]([^\s'"]+)`)
	if m := re.FindStringSubmatch(cmd); m != nil {
		return m[1]
	}
	return ""
}

type node struct {
	ID        string             `json:"node_id"`
	IP        string             `json:"node_ip"`
	Head      bool               `json:"is_head_node"`
	State     string             `json:"state"`
	Name      string             `json:"node_name"`
	Resources map[string]float64 `json:"resources_total"`
	Metrics   string             `json:"metrics_export_port,omitempty"`
	seen      time.Time
}

func ownIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return "127.0.0.1"
}

func runHead(cmd string) {
	var mu sync.Mutex
	ip := ownIP()
	nodes := map[string]*node{"head": {ID: "head", IP: ip, Head: true, State: "ALIVE", Name: ip, Metrics: metricsPort(cmd),
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}, seen: time.Now()}}
	serveMetrics(metricsPort(cmd))
	writeDashboards()
	alive := func() []*node {
		mu.Lock()
		defer mu.Unlock()
		var list []*node
		for _, n := range nodes {
			if !n.Head && time.Since(n.seen) > 3*time.Second {
				n.State = "DEAD"
			}
			list = append(list, n)
		}
		return list
	}
	go func() {
		for {
			writeServiceDiscovery(alive())
			time.Sleep(time.Second)
		}
	}()
	token := os.Getenv("RAY_AUTH_TOKEN")
	auth := os.Getenv("RAY_AUTH_MODE") == "token"

	gcs := http.NewServeMux()
	gcs.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var n node
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		n.State, n.seen, n.Name = "ALIVE", time.Now(), n.IP
		nodes[n.ID] = &n
		mu.Unlock()
	})
	port := flag(cmd, "port")
	if port == "" {
		port = "6379"
	}
	go http.ListenAndServe(":"+port, gcs)

	dash := http.NewServeMux()
	guard := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if auth {
				got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				if got == "" {
					http.Error(w, "Unauthorized: Missing authentication token", 401)
					return
				}
				if got != token {
					http.Error(w, "Forbidden: Invalid authentication token", 403)
					return
				}
			}
			h(w, r)
		}
	}
	dash.HandleFunc("/api/version", guard(func(w http.ResponseWriter, r *http.Request) {
		writeAny(w, map[string]string{"version": "4", "ray_version": "2.54.0", "ray_commit": "standin", "session_name": "session_standin"})
	}))
	dash.HandleFunc("/api/jobs/", guard(func(w http.ResponseWriter, r *http.Request) {
		writeAny(w, []any{})
	}))
	dash.HandleFunc("/api/grafana_health", guard(func(w http.ResponseWriter, r *http.Request) {
		host := os.Getenv("RAY_GRAFANA_HOST")
		if err := probe(host + "/api/health"); err != nil {
			writeAny(w, map[string]any{"result": false, "msg": "Grafana healthcheck failed: " + err.Error()})
			return
		}
		writeAny(w, map[string]any{"result": true, "msg": "Grafana running", "data": map[string]any{
			"grafanaHost": host, "sessionName": "session_standin", "dashboardUids": map[string]string{"default": dashboardUID}}})
	}))
	dash.HandleFunc("/api/prometheus_health", guard(func(w http.ResponseWriter, r *http.Request) {
		if err := probe(os.Getenv("RAY_PROMETHEUS_HOST") + "/-/healthy"); err != nil {
			writeAny(w, map[string]any{"result": false, "msg": "prometheus healthcheck failed: " + err.Error()})
			return
		}
		writeAny(w, map[string]any{"result": true, "msg": "prometheus running"})
	}))
	dash.HandleFunc("/api/v0/nodes", guard(func(w http.ResponseWriter, r *http.Request) {
		list := alive()
		writeAny(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"result": map[string]any{
			"total": len(list), "num_after_truncation": len(list), "num_filtered": len(list), "result": list}}})
	}))
	dash.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ray dashboard standin") })
	dport := flag(cmd, "dashboard-port")
	if dport == "" {
		dport = "8265"
	}
	go func() {
		if err := http.ListenAndServe(":"+dport, dash); err != nil {
			fmt.Fprintln(os.Stderr, "standin head:", err)
			os.Exit(1)
		}
	}()
	fmt.Println("standin ray head up at", ip)
	waitSignal()
}

func num(s string, def float64) float64 {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return def
}

func runWorker(cmd string) {
	addr := flag(cmd, "address")
	if addr == "" {
		fmt.Fprintln(os.Stderr, "standin worker: no --address")
		os.Exit(2)
	}
	host, _, _ := strings.Cut(addr, ":")
	hostname, _ := os.Hostname()
	n := node{ID: "worker-" + hostname, IP: ownIP(), Metrics: metricsPort(cmd),
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}}
	serveMetrics(n.Metrics)
	body, _ := json.Marshal(n)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("standin ray worker joining", addr)
	for {
		resp, err := http.Post("http://"+host+":"+portOf(addr)+"/register", "application/json", strings.NewReader(string(body)))
		if err == nil {
			resp.Body.Close()
		}
		select {
		case <-stop:
			fmt.Println("standin: stopping on signal")
			return
		case <-time.After(time.Second):
		}
	}
}

func portOf(addr string) string {
	if _, p, ok := strings.Cut(addr, ":"); ok {
		return p
	}
	return "6379"
}

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

func probe(url string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
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

// promTargets answers /api/v1/targets from Ray's service-discovery file,
// scraping each target to tell up from down, as Prometheus would.
func promTargets(w http.ResponseWriter, r *http.Request) {
	var groups []struct {
		Labels  map[string]string `json:"labels"`
		Targets []string          `json:"targets"`
	}
	if b, err := os.ReadFile(rayTmp + "/prom_metrics_service_discovery.json"); err == nil {
		_ = json.Unmarshal(b, &groups)
	}
	active := []any{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range groups {
		for _, t := range g.Targets {
			wg.Add(1)
			go func(job, t string) {
				defer wg.Done()
				url := "http://" + t + "/metrics"
				health, lastErr := "up", ""
				if err := probe(url); err != nil {
					health, lastErr = "down", err.Error()
				}
				mu.Lock()
				active = append(active, map[string]any{"labels": map[string]string{"job": job, "instance": t},
					"scrapePool": job, "scrapeUrl": url, "health": health, "lastError": lastErr})
				mu.Unlock()
			}(g.Labels["job"], t)
		}
	}
	wg.Wait()
	writeAny(w, map[string]any{"status": "success", "data": map[string]any{"activeTargets": active}})
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
