package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
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
	// Joined: the raylet registered with a GCS before; one that does not
	// know it (a restarted head) refuses it rather than taking it anew.
	Joined bool `json:"joined,omitempty"`
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

// register announces the node to the head's GCS with the token; 1: the head
// cannot be reached, 2: it refused the token or the node (marked DEAD), 3:
// it does not know this node (a new cluster: the head restarted).
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
	if resp.StatusCode == http.StatusNotFound {
		return 3
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintln(os.Stderr, "the GCS refused this node:", resp.Status)
		return 2
	}
	return 0
}

// unregister is the raylet's UnregisterSelf on SIGTERM (src/ray/raylet/
// main.cc: NodeDeathInfo EXPECTED_TERMINATION, "received SIGTERM"): the
// GCS marks the node DEAD at once. Best effort, as a raylet that cannot
// reach its GCS just exits.
func unregister(host, port, id string) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+net.JoinHostPort(host, port)+"/unregister", strings.NewReader(`{"node_id":"`+id+`"}`))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("RAY_AUTH_TOKEN"))
	c := http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
	}
}

func portOf(addr string) string {
	if _, p, ok := strings.Cut(addr, ":"); ok {
		return p
	}
	return "6379"
}
