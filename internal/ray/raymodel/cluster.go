package raymodel

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
)

// Resources are Ray resource quantities by name (CPU, GPU, memory, custom).
type Resources map[string]float64

// NodeSpec is what a raylet registers with the GCS.
type NodeSpec struct {
	ID     string // "" lets the model name it
	IP     string
	Head   bool
	Total  Resources
	Labels map[string]string
}

type node struct {
	NodeSpec
	state   string // ALIVE or DEAD
	message string
	silent  time.Time // when its raylet stopped answering; zero while it answers
	cut     bool      // silent because its network is cut: every check times out
	used    Resources
	gpus    []float64 // per GPU instance, the fraction handed out
}

// Cluster is one Ray cluster as its GCS and dashboard see it.
type Cluster struct {
	mu   sync.Mutex
	cfg  Config
	gen  int // head (GCS) starts: each is a new cluster
	seq  int
	node []*node
	jobs map[string]*Job
	ord  []string
	pkgs map[string]*pkg
	// Run gives the program a started job's driver runs (nil: none, the
	// job stays RUNNING until stopped). Called with the model's lock held.
	Run func(j *Job) Program
	// Storage is where programs write checkpoints (nil: nowhere).
	Storage Storage
}

// New makes an empty cluster (no head yet: call Join with Head set).
func New(cfg Config) *Cluster {
	return &Cluster{cfg: cfg.withDefaults(), jobs: map[string]*Job{}, pkgs: map[string]*pkg{}}
}

// Config is the cluster's configuration, defaults filled in.
func (c *Cluster) Config() Config { return c.cfg }

func (c *Cluster) now() time.Time { return c.cfg.Now() }

// Join registers a raylet; its node is ALIVE. It returns the node id.
func (c *Cluster) Join(s NodeSpec) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if s.ID == "" {
		s.ID = fmt.Sprintf("%02d%054x", c.gen, c.seq)
	}
	n := &node{NodeSpec: s, state: "ALIVE", used: Resources{}}
	n.gpus = make([]float64, int(s.Total["GPU"]+0.999))
	c.node = append(c.node, n)
	c.step()
	return s.ID
}

// Known reports whether the GCS has node id ALIVE: a raylet's reconnect
// after its head restarted finds it is not.
func (c *Cluster) Known(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	n := c.find(id)
	return n != nil && n.state == "ALIVE"
}

// Silence says node id's raylet stopped answering at the given time
// without unregistering: its container was killed (SIGKILL, `docker kill`,
// out of memory) or the raylet crashed, and its address refuses at once.
// The node stays ALIVE until the health checks give up (the typical
// DeadAfter), then is DEAD; what ran on it is lost at once (actors and
// Train workers die with their processes). A graceful stop is Unregister.
func (c *Cluster) Silence(id string, at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.find(id)
	if n == nil || n.state != "ALIVE" {
		return false
	}
	if n.silent.IsZero() {
		n.silent = at
	}
	c.step()
	return true
}

// Cut says node id's network was cut at the given time (the raylet runs
// on, unreachable): every health check waits out health_check_timeout_ms,
// so the node stays ALIVE for the longest DeadAfter, then is DEAD.
func (c *Cluster) Cut(id string, at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.find(id)
	if n == nil || n.state != "ALIVE" {
		return false
	}
	if n.silent.IsZero() {
		n.silent, n.cut = at, true
	}
	c.step()
	return true
}

// Unregister plays a graceful stop (`docker stop`, `ray stop`): SIGTERM
// reaches the raylet (through `ray start --block`'s shutdown hook), whose
// handler unregisters its node with the GCS (NodeDeathInfo
// EXPECTED_TERMINATION, "received SIGTERM"; src/ray/raylet/main.cc). The
// node is DEAD at once, without the health checks' wait; what ran on it is
// lost. It reports whether node id was ALIVE.
func (c *Cluster) Unregister(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.find(id)
	if n == nil || n.state != "ALIVE" {
		return false
	}
	c.lost(n)
	if n.silent.IsZero() {
		n.silent = c.now() // its processes are gone from now: the job monitor counts from here
	}
	n.state, n.message = "DEAD", StoppedMessage
	c.step()
	return true
}

// UnregisterIP is Unregister for the ALIVE node at ip that still answers
// (the container the host stopped); it reports whether there was one.
func (c *Cluster) UnregisterIP(ip string) bool {
	id := c.answeringAt(ip)
	return id != "" && c.Unregister(id)
}

// answeringAt is the id of the ALIVE node at ip whose raylet still
// answers, or "".
func (c *Cluster) answeringAt(ip string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.node {
		if n.IP == ip && n.state == "ALIVE" && n.silent.IsZero() {
			return n.ID
		}
	}
	return ""
}

// The state messages of a DEAD node: a raylet that unregistered on SIGTERM,
// and one the health checks gave up on. Ray's reason messages are "received
// SIGTERM" (raylet main.cc) and "health check failed due to missing too
// many heartbeats" (gcs_health_check_manager); the "Expected/Unexpected
// termination: " prefixes are the model's, not confirmed for 2.54.
const (
	StoppedMessage = "Expected termination: received SIGTERM"
	SilentMessage  = "Unexpected termination: health check failed due to missing too many heartbeats"
)

// SilenceIP is Silence for the ALIVE node at ip (the container the host
// stopped); it reports whether there was one.
func (c *Cluster) SilenceIP(ip string) bool {
	id := c.answeringAt(ip)
	return id != "" && c.Silence(id, c.now())
}

// Answering reports whether node id is ALIVE and its raylet answers.
func (c *Cluster) Answering(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.find(id)
	return n != nil && n.state == "ALIVE" && n.silent.IsZero()
}

// Nodes lists the nodes as GET /api/v0/nodes does, dead ones included.
func (c *Cluster) Nodes() []ray.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	out := make([]ray.Node, 0, len(c.node))
	for _, n := range c.node {
		out = append(out, ray.Node{NodeID: n.ID, NodeIP: n.IP, IsHeadNode: n.Head, State: n.state,
			StateMessage: n.message, NodeName: n.IP, ResourcesTotal: copyRes(n.Total), Labels: n.Labels})
	}
	return out
}

// RestartHead plays the head container restarting without GCS fault
// tolerance (no external Redis): the new GCS is a new cluster. It knows only
// the new head node; jobs, packages and actors of the old one are gone. The
// old workers' raylets are not listed; they exit once they have failed to
// reach their GCS for GCSReconnectTimeout (see RayletExits).
func (c *Cluster) RestartHead() string {
	c.mu.Lock()
	var head *node
	for _, n := range c.node {
		if n.Head {
			head = n
		}
	}
	c.gen++
	c.node, c.jobs, c.ord, c.pkgs = nil, map[string]*Job{}, nil, map[string]*pkg{}
	c.mu.Unlock()
	if head == nil {
		return ""
	}
	s := head.NodeSpec
	s.ID = ""
	return c.Join(s)
}

// RayletExits says whether a raylet that has not reached a GCS that knows
// it since lost exits now: after GCSReconnectTimeout, with EXIT_FAILURE,
// which `ray start --block` takes for an unexpected exit and ends with
// exit code 1 (scripts.py), so the container stops unless a restart policy
// starts it again, as a new node.
func (c *Cluster) RayletExits(lost time.Time) bool {
	return !lost.IsZero() && c.now().Sub(lost) >= c.cfg.GCSReconnectTimeout
}

func (c *Cluster) find(id string) *node {
	for _, n := range c.node {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// step applies what Ray's background loops would have done by now: health
// checks, the job monitor, package expiry, the programs. The lock is held.
func (c *Cluster) step() {
	now := c.now()
	typical, longest := c.cfg.DeadAfter()
	for _, n := range c.node {
		if n.state == "ALIVE" && !n.silent.IsZero() {
			c.lost(n)
			after := typical
			if n.cut {
				after = longest
			}
			if now.Sub(n.silent) >= after {
				n.state, n.message = "DEAD", SilentMessage
			}
		}
	}
	c.stepPackages(now)
	c.stepJobs(now)
	c.stepPackages(now)
}

func copyRes(r Resources) map[string]float64 {
	out := make(map[string]float64, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

func sortedKeys(r Resources) []string {
	ks := make([]string, 0, len(r))
	for k := range r {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// generation counts head restarts (the session name changes with each).
func (c *Cluster) generation() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}
