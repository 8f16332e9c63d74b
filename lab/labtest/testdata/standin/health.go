package main

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"
)

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
	if strings.Contains(cmd, "/api/local_raylet_healthz") {
		// The worker's Python check: this node's agent, on its own port.
		url = "http://127.0.0.1:" + os.Getenv("MLTRAIN_RAY_AGENT_PORT") + "/api/local_raylet_healthz"
	}
	if url == "" && strings.Contains(cmd, "health-check") && flag(cmd, "address") == "" {
		url = strings.TrimSpace(readFile(headAddressFile)) // the head's own GCS
	}
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

// killRaylet makes the worker (PID 1) lose its raylet, as a crash would.
func killRaylet() int {
	if err := syscall.Kill(1, syscall.SIGUSR1); err != nil {
		fmt.Fprintln(os.Stderr, "standin kill-raylet:", err)
		return 1
	}
	return 0
}
