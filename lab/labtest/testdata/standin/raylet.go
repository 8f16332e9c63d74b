package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A node's raylet socket and a driver's way to it, as Ray 2.54 has them.
//
// Ray names a node's sockets in its session dir (under /tmp/ray): the first
// of raylet, raylet.1, raylet.2, ... that does not exist yet
// (Node._make_inc_temp). It picks the name in Python when `ray start` runs;
// the raylet binds it later, when it has started, so two nodes sharing a
// temp dir and starting at once can pick the same name, and the second
// bind fails. A stale socket (a node stopped without cleaning up) is
// skipped like any existing name.
//
// A driver (`ray.init(address=...)`, as a job's entrypoint on the head)
// connects to a raylet it finds by address alone: the GCS hands it the first
// ALIVE node whose address is the driver's (GetNodeToConnectForDriver), in
// an order nobody chooses, and the driver opens that node's Unix socket.

const socketsDir = "/tmp/ray/session_standin/sockets"

// pickToBind is how long after `ray start` picked a socket name its raylet
// binds it.
const pickToBind = 700 * time.Millisecond

// listenRaylet picks and binds the raylet socket of node id; on failure the
// node exits as Ray's does when its raylet cannot start. A client that
// connects is told the node's id, as a raylet answers a registering worker
// with its own: a driver can tell it reached another node's raylet.
func listenRaylet(id string) (string, net.Listener) {
	if err := os.MkdirAll(socketsDir, 0o755); err != nil {
		fatalRaylet(err)
	}
	path := ""
	for i := 0; path == ""; i++ {
		name := "raylet"
		if i > 0 {
			name = fmt.Sprintf("raylet.%d", i)
		}
		if _, err := os.Lstat(filepath.Join(socketsDir, name)); os.IsNotExist(err) {
			path = filepath.Join(socketsDir, name)
		}
	}
	time.Sleep(pickToBind)
	l, err := net.Listen("unix", path)
	if err != nil {
		fatalRaylet(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // a raylet killed leaves its socket behind
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, id)
			c.Close()
		}
	}()
	return path, l
}

func fatalRaylet(err error) {
	fmt.Fprintln(os.Stderr, "[raylet] Failed to start the raylet:", err)
	os.Exit(1)
}

// gcsNode is what the GCS tells a driver of a node.
type gcsNode struct {
	ID      string `json:"node_id"`
	Address string `json:"node_manager_address"`
	State   string `json:"state"`
	Socket  string `json:"raylet_socket_name"`
}

// runDriver plays `ray.init(address=...)` on this container: it asks the
// GCS for the nodes at its own address and opens the raylet socket of each,
// since Ray may hand it any of them. It fails when one cannot be opened.
func runDriver() int {
	gcs := strings.TrimSpace(readFile(headAddressFile))
	if gcs == "" {
		fmt.Fprintln(os.Stderr, "driver: no Ray cluster address on this node")
		return 1
	}
	req, _ := http.NewRequest(http.MethodGet, gcs+"nodes", nil)
	req.Header.Set("Authorization", "Bearer "+os.Getenv("RAY_AUTH_TOKEN"))
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver: GCS:", err)
		return 1
	}
	defer resp.Body.Close()
	var nodes []gcsNode
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		fmt.Fprintln(os.Stderr, "driver: GCS answer:", resp.Status, err)
		return 1
	}
	ip := routeIP(gcs)
	var mine []gcsNode
	for _, n := range nodes {
		if n.State == "ALIVE" && n.Address == ip {
			mine = append(mine, n)
		}
	}
	if len(mine) == 0 {
		fmt.Fprintf(os.Stderr, "This node has an IP address of %s, and Ray expects this IP address to be either the GCS address or one of the Raylet addresses.\n", ip)
		return 1
	}
	bad := 0
	for _, n := range mine {
		got, err := rayletAt(n.Socket)
		switch {
		case err != nil:
			bad++
			fmt.Printf("node %s: cannot connect to its raylet socket: %v\n", n.ID, err)
		case got != n.ID:
			bad++
			fmt.Printf("node %s: its socket %s here is the raylet of node %s\n", n.ID, n.Socket, got)
		default:
			fmt.Printf("node %s: raylet socket %s ok\n", n.ID, n.Socket)
		}
	}
	fmt.Printf("%d nodes at %s, %d unreachable\n", len(mine), ip, bad)
	if bad > 0 {
		return 1
	}
	return 0
}

// rayletAt is the id of the node whose raylet answers at socket.
func rayletAt(socket string) (string, error) {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

// routeIP is the address this host uses toward the GCS at url, as Ray's
// get_node_ip_address finds a node's address.
func routeIP(url string) string {
	hostport := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	if h, _, _ := net.SplitHostPort(hostport); net.ParseIP(h).IsLoopback() {
		return ownIP() // Ray routes toward the outside to find the node's own address
	}
	c, err := net.Dial("udp", hostport)
	if err != nil {
		return ownIP()
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}
