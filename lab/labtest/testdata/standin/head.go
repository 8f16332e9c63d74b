package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// head is the Ray head: its GCS and dashboard run the shared model of Ray
// (internal/ray/raymodel), so jobs submitted here are placed, run train.py's
// event contract and write checkpoints to MinIO as the in-process double's
// do. What the model does not keep (metrics ports, raylet sockets, when a
// raylet was last heard) is kept here, by node id.
type head struct {
	c     *raymodel.Cluster
	mu    sync.Mutex
	nodes map[string]*node
}

// silentAfter: a worker heartbeats every second; missing two is silence.
const silentAfter = 2 * time.Second

func runHead(cmd string) {
	cfg := raymodel.ConfigFromEnv(os.Getenv)
	c := raymodel.New(cfg)
	c.Run = raymodel.TrainPy{Epoch: envDuration("STANDIN_TRAIN_EPOCH", time.Second), Restart: 2 * time.Second}.Program
	c.Storage = s3FromEnv()
	h := &head{c: c, nodes: map[string]*node{}}
	ip := nodeIP(cmd)
	sock, _ := listenRaylet("head")
	hn := &node{ID: "head", IP: ip, Head: true, Name: ip, Metrics: metricsPort(cmd), Labels: nodeLabels(cmd), Socket: sock,
		Resources: map[string]float64{"CPU": num(flag(cmd, "num-cpus"), 1), "GPU": num(flag(cmd, "num-gpus"), 0)}, seen: time.Now()}
	h.nodes[hn.ID] = hn
	c.Join(raymodel.NodeSpec{ID: hn.ID, IP: ip, Head: true, Total: hn.Resources, Labels: hn.Labels})
	serveMetrics(metricsPort(cmd))
	writeDashboards()
	go h.healthChecks(cfg)
	go h.tick()
	go func() {
		for {
			writeServiceDiscovery(h.list())
			// Ray's PrometheusServiceDiscoveryWriter flushes every 5 s: a
			// node that just joined is listed up to 5 s later.
			time.Sleep(5 * time.Second)
		}
	}()
	gcs := http.NewServeMux()
	gcs.HandleFunc("/register", h.register)
	gcs.HandleFunc("/unregister", h.unregister)
	gcs.HandleFunc("/nodes", func(w http.ResponseWriter, r *http.Request) {
		if !tokenOK(w, r) {
			return
		}
		var out []gcsNode
		for _, n := range h.list() {
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
	serveDashboard(cmd, c)
	typical, _ := cfg.DeadAfter()
	fmt.Println("standin ray head up at", ip, "; silent nodes are marked DEAD after", typical)
	waitSignal()
}

// register is a raylet's registration and heartbeat. A node the model has
// ALIVE is heard; a new one joins; one this GCS has marked DEAD is refused
// (Ray never takes a dead node back) and one it never knew that says it had
// joined before is told it is unknown: this head is a new cluster.
func (h *head) register(w http.ResponseWriter, r *http.Request) {
	if !tokenOK(w, r) {
		return
	}
	var n node
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old, seen := h.nodes[n.ID]
	switch {
	case seen && h.c.Known(n.ID):
		if n.Manager == "" {
			old.seen = time.Now() // else its liveness is the head's health check
		}
	case seen:
		http.Error(w, "node "+n.ID+" was marked DEAD", http.StatusGone)
	case n.Joined:
		http.Error(w, "node "+n.ID+" is not known to this GCS (a new cluster)", http.StatusNotFound)
	default:
		n.seen, n.Name = time.Now(), n.IP
		h.nodes[n.ID] = &n
		h.c.Join(raymodel.NodeSpec{ID: n.ID, IP: n.IP, Total: n.Resources, Labels: n.Labels})
	}
}

// unregister is a raylet's UnregisterSelf: its node is DEAD at once, with
// the reason "received SIGTERM" (raymodel.Cluster.Unregister).
func (h *head) unregister(w http.ResponseWriter, r *http.Request) {
	if !tokenOK(w, r) {
		return
	}
	var req struct {
		ID string `json:"node_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.nodes[req.ID]; !ok || !h.c.Unregister(req.ID) {
		http.Error(w, "node "+req.ID+" is not ALIVE in this GCS", http.StatusNotFound)
	}
}

// healthChecks start one checker per raylet with a node-manager port, as
// Ray's GCS health-checks each node on its own timer.
func (h *head) healthChecks(cfg raymodel.Config) {
	started := map[string]bool{}
	for {
		h.mu.Lock()
		for id, n := range h.nodes {
			if !n.Head && n.Manager != "" && !started[id] {
				started[id] = true
				go h.healthCheck(n, cfg)
			}
		}
		h.mu.Unlock()
		time.Sleep(250 * time.Millisecond)
	}
}

// healthCheck checks one raylet as gcs_health_check_manager.cc does: each
// check waits up to health_check_timeout_ms, and the next starts
// health_check_period_ms after it ended. A node this head cannot reach
// (another host behind a firewall, a port not open) is never heard, and
// goes DEAD after health_check_failure_threshold failed checks. How long
// that takes depends on how a check fails, and the model keeps the node
// ALIVE that long from its last good check: a check refused at once (the
// raylet died, its port closed: a kill or crash) is Silence, failures x
// period; a check that waits out its timeout (a cut network: nothing
// answers, not even a refusal) is Cut, failures x (period + timeout).
func (h *head) healthCheck(n *node, cfg raymodel.Config) {
	last := time.Now()
	for h.c.Known(n.ID) {
		start := time.Now()
		c, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, n.Manager), cfg.HealthCheckTimeout)
		var ne net.Error
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin head: health check of node %s failed after %s: %v\n", n.ID, time.Since(start).Round(time.Millisecond), err)
		}
		switch {
		case err == nil:
			c.Close()
			last = time.Now()
			h.mu.Lock()
			n.seen = last
			h.mu.Unlock()
		case errors.As(err, &ne) && ne.Timeout():
			h.c.Cut(n.ID, last)
			return
		default:
			h.c.Silence(n.ID, last)
			return
		}
		time.Sleep(cfg.HealthCheckPeriod)
	}
}

// tick tells the model which raylets fell silent and moves it on, so jobs
// run in real time whether or not anyone polls.
func (h *head) tick() {
	for {
		h.mu.Lock()
		for id, n := range h.nodes {
			// A raylet with a node-manager port is the health checks' to judge.
			if !n.Head && n.Manager == "" && time.Since(n.seen) > silentAfter && h.c.Answering(id) {
				h.c.Silence(id, n.seen)
			}
		}
		h.mu.Unlock()
		h.c.Nodes()
		time.Sleep(250 * time.Millisecond)
	}
}

// list is every node with its state from the model.
func (h *head) list() []*node {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*node
	for _, rn := range h.c.Nodes() {
		if n, ok := h.nodes[rn.NodeID]; ok {
			c := *n
			c.State = rn.State
			out = append(out, &c)
		}
	}
	return out
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
