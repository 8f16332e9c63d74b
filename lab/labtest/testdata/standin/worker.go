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
	"syscall"
	"time"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// runWorker plays a worker node: a raylet heartbeating to the head and a
// dashboard agent that lives and dies with it. Each start is a new node
// (Ray gives a restarted raylet a new node id; the old one stays DEAD).
// A stopped worker (SIGTERM, as `docker stop` sends) unregisters, as
// `ray start --block`'s shutdown hook terminates the raylet and the
// raylet's SIGTERM handler unregisters its node: Ray lists it DEAD at once.
// A killed one (SIGKILL) or one whose raylet died (`/app kill-raylet`) is
// silent: the head notices when its health checks give up. A
// raylet that cannot reach a GCS that knows it for
// gcs_rpc_server_reconnect_timeout_s exits with EXIT_FAILURE, and
// `ray start --block`, seeing a subprocess exit unexpectedly, exits 1.
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
	// The raylet's gRPC server: what the head's health check reaches. With
	// no --node-manager-port, Ray's raylet takes a free port (0).
	manager, err := net.Listen("tcp", net.JoinHostPort(flag(cmd, "node-ip-address"), n.Manager))
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin worker: node manager port:", err)
		os.Exit(1)
	}
	_, n.Manager, _ = net.SplitHostPort(manager.Addr().String())
	go func() {
		for {
			c, err := manager.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	raylet := make(chan os.Signal, 1)
	signal.Notify(raylet, syscall.SIGUSR1)
	reconnect := raymodel.ConfigFromEnv(os.Getenv).GCSReconnectTimeout
	fmt.Println("standin ray worker joining", addr, "as", n.ID, "; agent on", agentPort)
	// As `ray start`: it waits a little for the GCS, then gives up; a
	// refused token or node ends it at once.
	var lost time.Time
	for deadline := time.Now().Add(10 * time.Second); ; {
		body, _ := json.Marshal(n)
		code := register(host, portOf(addr), body)
		switch {
		case code == 2 || (code != 0 && !n.Joined && time.Now().After(deadline)):
			os.Exit(code)
		case code == 0:
			n.Joined, lost = true, time.Time{}
		case n.Joined && lost.IsZero():
			lost = time.Now()
		case n.Joined && time.Since(lost) >= reconnect:
			fmt.Fprintf(os.Stderr, "[raylet] Failed to connect to GCS within %.0f seconds. GCS may have been killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly. The program will terminate.\n", reconnect.Seconds())
			fmt.Fprintln(os.Stderr, "Some Ray subprocesses exited unexpectedly:\n  raylet [exit code=1]\nRemaining processes will be killed.")
			os.Exit(1)
		}
		select {
		case <-stop:
			if n.Joined {
				unregister(host, portOf(addr), n.ID)
			}
			fmt.Println("standin: stopping on signal; the raylet unregistered (received SIGTERM)")
			return
		case <-raylet:
			// The raylet is gone; its agent goes with it. The container
			// stays up, like `ray start --block` after a raylet exit 0.
			_ = agent.Shutdown(context.Background())
			_ = rayletSock.Close()
			_ = manager.Close() // the head's health checks are refused from now
			fmt.Println("standin: raylet died; the container keeps running")
			<-stop
			return
		case <-time.After(time.Second):
		}
	}
}
