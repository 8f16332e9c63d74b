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
	case isHealthcheck(args):
		os.Exit(healthcheck(role, joined))
	case strings.Contains(joined, "ray start") && strings.Contains(joined, "--head"):
		runHead(joined)
	case strings.Contains(joined, "ray start"):
		runWorker(joined)
	case role == "grafana":
		serve(":3000", map[string]any{"/api/health": map[string]string{"database": "ok", "version": "standin"}})
	case role == "prometheus":
		serve(":9090", map[string]any{"/-/ready": "Prometheus Server is Ready.", "/-/healthy": "Prometheus Server is Healthy.",
			"/api/v1/targets": map[string]any{"status": "success", "data": map[string]any{"activeTargets": []any{}}}})
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
		body := body
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
	nodes := map[string]*node{"head": {ID: "head", IP: ip, Head: true, State: "ALIVE", Name: ip,
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}, seen: time.Now()}}
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
	dash.HandleFunc("/api/v0/nodes", guard(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		var list []*node
		for _, n := range nodes {
			if !n.Head && time.Since(n.seen) > 3*time.Second {
				n.State = "DEAD"
			}
			list = append(list, n)
		}
		mu.Unlock()
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
	n := node{ID: "worker-" + hostname, IP: ownIP(),
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}}
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
