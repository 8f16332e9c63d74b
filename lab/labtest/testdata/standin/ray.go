package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

type node struct {
	ID        string             `json:"node_id"`
	IP        string             `json:"node_ip"`
	Head      bool               `json:"is_head_node"`
	State     string             `json:"state"`
	Name      string             `json:"node_name"`
	Resources map[string]float64 `json:"resources_total"`
	Metrics   string             `json:"metrics_export_port,omitempty"`
	Manager   string             `json:"node_manager_port,omitempty"`
	Labels    map[string]string  `json:"labels,omitempty"`
	// Socket is for the GCS's own node table (drivers read it there), not
	// the dashboard's node list.
	Socket string `json:"raylet_socket_name,omitempty"`
	seen   time.Time
}

// nodeIP is the address a node advertises: --node-ip-address (Ray on the
// host network), else the container's own.
func nodeIP(cmd string) string {
	if ip := flag(cmd, "node-ip-address"); ip != "" {
		return ip
	}
	return ownIP()
}

// headAddressFile is where the head leaves its GCS address for
// `ray health-check`.
const headAddressFile = "/tmp/standin-gcs-address"

// nodeLabels reads ray start --labels=k=v,k2=v2.
func nodeLabels(cmd string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(flag(cmd, "labels"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// tokenOK is Ray's token check on its gRPC servers (RAY_AUTH_MODE=token):
// the peer's Bearer token must be this node's.
func tokenOK(w http.ResponseWriter, r *http.Request) bool {
	if os.Getenv("RAY_AUTH_MODE") != "token" {
		return true
	}
	switch got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); {
	case got == "":
		http.Error(w, "Unauthorized: Missing authentication token", http.StatusUnauthorized)
		return false
	case got != os.Getenv("RAY_AUTH_TOKEN"):
		http.Error(w, "Forbidden: Invalid authentication token", http.StatusForbidden)
		return false
	}
	return true
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

// deadAfter is how long a silent worker stays ALIVE: Ray 2.54's GCS marks a
// raylet DEAD after health_check_failure_threshold (5) failed checks
// health_check_period_ms (3 s) apart. Tests shorten it.
func deadAfter() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("STANDIN_RAY_DEAD_AFTER")); err == nil && d > 0 {
		return d
	}
	return 15 * time.Second
}

func runHead(cmd string) {
	var mu sync.Mutex
	ip := nodeIP(cmd)
	sock, _ := listenRaylet("head")
	nodes := map[string]*node{"head": {ID: "head", IP: ip, Head: true, State: "ALIVE", Name: ip, Metrics: metricsPort(cmd), Labels: nodeLabels(cmd), Socket: sock,
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}, seen: time.Now()}}
	serveMetrics(metricsPort(cmd))
	writeDashboards()
	silent := deadAfter()
	list := func() []*node {
		mu.Lock()
		defer mu.Unlock()
		var out []*node
		for _, n := range nodes {
			if !n.Head && n.State == "ALIVE" && time.Since(n.seen) > silent {
				n.State = "DEAD"
			}
			out = append(out, n)
		}
		return out
	}
	// As Ray's GCS health-checks each raylet at its node-manager port: a
	// node this head cannot reach (another host behind a firewall, a port
	// not open) is never seen healthy, and goes DEAD.
	go func() {
		for {
			mu.Lock()
			var check []*node
			for _, n := range nodes {
				if !n.Head && n.State == "ALIVE" && n.Manager != "" {
					check = append(check, n)
				}
			}
			mu.Unlock()
			for _, n := range check {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, n.Manager), time.Second)
				if err == nil {
					c.Close()
					mu.Lock()
					n.seen = time.Now()
					mu.Unlock()
				}
			}
			time.Sleep(time.Second)
		}
	}()
	go func() {
		for {
			writeServiceDiscovery(list())
			// Ray's PrometheusServiceDiscoveryWriter flushes every 5 s: a
			// node that just joined is listed up to 5 s later.
			time.Sleep(5 * time.Second)
		}
	}()

	gcs := http.NewServeMux()
	gcs.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		if !tokenOK(w, r) {
			return
		}
		var n node
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if old, ok := nodes[n.ID]; ok && old.State == "DEAD" {
			http.Error(w, "node "+n.ID+" was marked DEAD", http.StatusGone) // as Ray: a dead node never comes back
			return
		}
		seen := time.Now()
		if old, ok := nodes[n.ID]; ok && n.Manager != "" {
			seen = old.seen // its liveness is the head's health check, not its own word
		}
		n.State, n.seen, n.Name = "ALIVE", seen, n.IP
		nodes[n.ID] = &n
	})
	gcs.HandleFunc("/nodes", func(w http.ResponseWriter, r *http.Request) {
		if !tokenOK(w, r) {
			return
		}
		var out []gcsNode
		for _, n := range list() {
			out = append(out, gcsNode{ID: n.ID, Address: n.IP, State: n.State, Socket: n.Socket})
		}
		writeAny(w, out)
	})
	port := flag(cmd, "port")
	if port == "" {
		port = "6379"
	}
	bindIP := flag(cmd, "node-ip-address") // Ray binds the node's address when told one
	// Where `ray health-check` finds this head's GCS, as Ray's CLI reads the
	// session's address files.
	gcsURL := "http://" + net.JoinHostPort(bindIP, port) + "/"
	if bindIP == "" {
		gcsURL = "http://127.0.0.1:" + port + "/"
	}
	_ = os.WriteFile(headAddressFile, []byte(gcsURL), 0o644)
	go func() {
		if err := http.ListenAndServe(net.JoinHostPort(bindIP, port), gcs); err != nil {
			fmt.Fprintln(os.Stderr, "standin head: GCS:", err)
			os.Exit(1)
		}
	}()
	serveDashboard(cmd, list)
	fmt.Println("standin ray head up at", ip, "; silent nodes are marked DEAD after", silent)
	waitSignal()
}

func serveDashboard(cmd string, list func() []*node) {
	token := os.Getenv("RAY_AUTH_TOKEN")
	auth := os.Getenv("RAY_AUTH_MODE") == "token"
	dash := http.NewServeMux()
	guard := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if auth {
				got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				if got == "" {
					http.Error(w, "Unauthorized: Missing authentication token", http.StatusUnauthorized)
					return
				}
				if got != token {
					http.Error(w, "Forbidden: Invalid authentication token", http.StatusForbidden)
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
		var l []node
		for _, n := range list() {
			c := *n
			c.Socket = ""
			l = append(l, c)
		}
		writeAny(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"result": map[string]any{
			"total": len(l), "num_after_truncation": len(l), "num_filtered": len(l), "result": l}}})
	}))
	dash.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ray dashboard standin") })
	dport := flag(cmd, "dashboard-port")
	if dport == "" {
		dport = "8265"
	}
	go func() {
		if err := http.ListenAndServe(net.JoinHostPort(flag(cmd, "dashboard-host"), dport), dash); err != nil {
			fmt.Fprintln(os.Stderr, "standin head:", err)
			os.Exit(1)
		}
	}()
}

// runWorker plays a worker node: a raylet heartbeating to the head and a
// dashboard agent that lives and dies with it. Each start is a new node
// (Ray gives a restarted raylet a new node id; the old one stays DEAD).
// A stopped worker never unregisters: the head notices by its silence.
func runWorker(cmd string) {
	addr := flag(cmd, "address")
	if addr == "" {
		fmt.Fprintln(os.Stderr, "standin worker: no --address")
		os.Exit(2)
	}
	host, _, _ := strings.Cut(addr, ":")
	hostname, _ := os.Hostname()
	n := node{ID: fmt.Sprintf("worker-%s-%x", hostname, time.Now().UnixNano()), IP: nodeIP(cmd), Metrics: metricsPort(cmd),
		Manager: flag(cmd, "node-manager-port"), Labels: nodeLabels(cmd),
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}}
	var rayletSock net.Listener
	n.Socket, rayletSock = listenRaylet(n.ID)
	serveMetrics(n.Metrics)
	agentPort := flag(cmd, "dashboard-agent-listen-port")
	if agentPort == "" {
		agentPort = "52365"
	}
	agent := &http.Server{Addr: ":" + agentPort, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/local_raylet_healthz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "success")
	})}
	go func() { _ = agent.ListenAndServe() }()
	if n.Manager != "" {
		// The raylet's gRPC server: what the head's health check reaches.
		l, err := net.Listen("tcp", net.JoinHostPort(flag(cmd, "node-ip-address"), n.Manager))
		if err != nil {
			fmt.Fprintln(os.Stderr, "standin worker: node manager port:", err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	body, _ := json.Marshal(n)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	raylet := make(chan os.Signal, 1)
	signal.Notify(raylet, syscall.SIGUSR1)
	fmt.Println("standin ray worker joining", addr, "as", n.ID, "; agent on", agentPort)
	// As `ray start`: it waits a little for the GCS, then gives up; a
	// refused token or node ends it at once, and later too (a raylet the GCS
	// marked dead exits).
	joined := false
	for deadline := time.Now().Add(10 * time.Second); ; {
		code := register(host, portOf(addr), body)
		switch {
		case code == 2 || (code == 1 && !joined && time.Now().After(deadline)):
			os.Exit(code)
		case code == 0:
			joined = true
		}
		select {
		case <-stop:
			fmt.Println("standin: stopping on signal")
			return
		case <-raylet:
			// The raylet is gone; its agent goes with it. The container
			// stays up, like `ray start --block` after a raylet exit 0.
			_ = agent.Shutdown(context.Background())
			_ = rayletSock.Close()
			fmt.Println("standin: raylet died; the container keeps running")
			<-stop
			return
		case <-time.After(time.Second):
		}
	}
}

// register announces the node to the head's GCS with the token; 1: the head
// cannot be reached, 2: it refused the token or the node.
func register(host, port string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, "http://"+net.JoinHostPort(host, port)+"/register", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("RAY_AUTH_TOKEN"))
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Unable to connect to GCS at %s:%s: %v\n", host, port, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		fmt.Fprintln(os.Stderr, "Token authentication is enabled but the authentication token is invalid or incorrect. (GCS said", resp.Status+")")
		return 2
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintln(os.Stderr, "the GCS refused this node:", resp.Status)
		return 2
	}
	return 0
}

func portOf(addr string) string {
	if _, p, ok := strings.Cut(addr, ":"); ok {
		return p
	}
	return "6379"
}
