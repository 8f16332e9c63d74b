// standin is a TEST FIXTURE, never shipped: one static binary that plays the
// lab's services in FROM-scratch images so `mltrain up` can be tested on an
// engine with no registry. Its role comes from /standin-role in the image.
//
//	ray-head:   `ray start --head ...`: Ray's dashboard API and GCS served
//	            by the shared model of Ray (internal/ray/raymodel, the same
//	            code as the in-process double): jobs are placed by their
//	            entrypoint resources, run workspace/train.py's event
//	            contract (raymodel.TrainPy, $STANDIN_TRAIN_EPOCH a epoch) and
//	            write checkpoints to the lab's MinIO with the lab user's
//	            keys. It health-checks each worker's node-manager port as
//	            Ray's GCS does: a worker whose checks are refused (its
//	            raylet died) stays ALIVE for failures x period, one whose
//	            checks time out (its network cut) for failures x (period +
//	            timeout), then DEAD; Ray's own variables
//	            (RAY_health_check_period_ms, RAY_health_check_timeout_ms,
//	            RAY_JOB_START_TIMEOUT_SECONDS, ...) or
//	            $STANDIN_RAY_DEAD_AFTER shorten the timings.
//	ray-worker: `ray start --address=HOST:PORT --num-gpus=G --num-cpus=C
//	            --dashboard-agent-listen-port=P`: its "raylet" registers with
//	            the head every second and its "dashboard agent" answers
//	            /api/local_raylet_healthz on P, until SIGTERM, when the
//	            raylet unregisters its node (DEAD at once, as Ray's does on
//	            `docker stop`). `/app
//	            kill-raylet` (docker exec) kills the raylet alone: its
//	            node-manager port closes and the agent exits with it, while the
//	            container keeps running (as `ray start --block` does when a
//	            raylet exits with code 0).
//	grafana, prometheus, jupyter: their health endpoints.
//
// For `mltrain verify` the stand-ins also play what it reads: Ray nodes serve
// /metrics on --metrics-export-port and the head writes Prometheus's
// service-discovery file and a Grafana dashboard into /tmp/ray (the shared
// ray-tmp volume) and answers /api/grafana_health and /api/prometheus_health;
// Prometheus reports those targets up or down by scraping them;
// Grafana lists the dashboards its provisioning files point at; and
// `nvidia-smi --query-gpu=uuid ...` / `rocminfo` print the UUIDs in
// $STANDIN_GPU_UUIDS (comma-separated), as a worker given those GPUs would.
//
// Any healthcheck command that names an http URL (curl, wget, sh -c "...")
// is answered by GETting that URL; the worker's Python check of
// /api/local_raylet_healthz GETs it on $MLTRAIN_RAY_AGENT_PORT; otherwise a
// check succeeds when the role's own port answers.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
	case len(args) > 0 && args[0] == "driver":
		os.Exit(runDriver())
	case len(args) > 0 && args[0] == "kill-raylet":
		os.Exit(killRaylet())
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
		go watchServiceDiscovery()
		serve(":9090", map[string]any{"/-/ready": "Prometheus Server is Ready.", "/-/healthy": "Prometheus Server is Healthy.",
			"/api/v1/targets": http.HandlerFunc(promTargets)})
	case role == "jupyter":
		serve(":8888", map[string]any{"/api": map[string]string{"version": "2.14.0"}})
	default:
		fmt.Println("standin: idle as", role, args)
		waitSignal()
	}
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

func num(s string, def float64) float64 {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return def
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
