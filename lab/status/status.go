// Package status reads a running lab back: its containers by their labels,
// the plan state.json records, and Ray's view of its nodes, and says where
// they disagree and what to run.
package status

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// ServiceStatus is one service as the engine and Ray report it.
type ServiceStatus struct {
	Service   string `json:"service"`
	Container string `json:"container"`
	Role      string `json:"role"`
	State     string `json:"state"`  // running, exited, ...
	Health    string `json:"health"` // healthy, unhealthy, starting, "" (no healthcheck)
	Image     string `json:"image"`
	// Workers only.
	WorkerIndex *int   `json:"worker_index,omitempty"`
	GPU         string `json:"gpu,omitempty"` // UUID, or "cpu (logical)" in rehearsal
	IP          string `json:"ip,omitempty"`
	// RayState is ALIVE / DEAD from Ray's node list, RayAbsent or RayNotAlive.
	RayState string `json:"ray_state,omitempty"`
	// RayStale: the container is down but Ray still lists its node ALIVE.
	RayStale bool `json:"ray_stale,omitempty"`
}

// Status is `mltrain status`: the containers beside Ray's view, and what
// the two say together. Notes explain every worker whose container and Ray
// node disagree; Next are the commands that fix what they say.
type Status struct {
	Project  string          `json:"project"`
	Services []ServiceStatus `json:"services"`
	// Planned are the services the lab should have, from PlanSource
	// (state.json, written by up or join before anything starts); Missing
	// are those with no container.
	Planned    []string `json:"planned,omitempty"`
	PlanSource string   `json:"plan_source,omitempty"`
	Missing    []string `json:"missing,omitempty"`
	// NotRunning are the planned services (every container's, when no plan
	// is known) whose container is not running: exited, created, paused...
	NotRunning []string  `json:"not_running,omitempty"`
	URLs       plan.URLs `json:"urls,omitempty"`
	Ray        string    `json:"ray"` // what the Ray probe said
	Notes      []string  `json:"notes,omitempty"`
	Next       []string  `json:"next,omitempty"`
	// Joined is the lab this host's workers joined (a second host).
	Joined *plan.Joined `json:"joined,omitempty"`
	// Remote are the Ray nodes of other hosts: joined hosts' workers on
	// the lab's first host, the head on a second host.
	Remote []RemoteNode `json:"remote_nodes,omitempty"`
	// LostHead are the running workers a restarted head does not know
	// (headlost.go).
	LostHead []string          `json:"lost_head,omitempty"`
	nodeIP   string            // this host's node address when the nodes span hosts
	commands nextstep.Commands // writes Next for this lab
	stateErr error             // state.json exists but cannot be read

	// Lease is the time left on the node's lease, when the lab knows it
	// (set by the command layer, which owns the clock).
	Lease *plan.Lease `json:"lease,omitempty"`
}

// RemoteNode is a Ray node another host runs, as the head lists it.
type RemoteNode struct {
	Host    string  `json:"host"`              // its address
	Service string  `json:"service,omitempty"` // its container's service on that host (node label)
	Lab     string  `json:"lab,omitempty"`     // the project on that host (node label)
	Head    bool    `json:"head,omitempty"`
	State   string  `json:"state"`
	GPUs    float64 `json:"gpus"`
	NodeID  string  `json:"node_id"`
}

// GetStatus rebuilds the lab's state from container labels, compares it with
// the services planned, then asks Ray which nodes are alive (best effort: a
// down Ray is reported, not an error).
func Get(ctx context.Context, eng docker.Engine, lab nextstep.Commands) (Status, error) {
	project, stateDir := lab.Project, lab.Dir()
	st := Status{Project: project, commands: lab}
	workers, err := st.readContainers(ctx, eng, project)
	if err != nil {
		return st, err
	}
	saved, ok := st.readPlan(stateDir)
	st.findNotRunning()
	if !ok {
		st.Ray = "unknown: no " + state.StateFile + " (run '" + st.commands.Line("up") + "')"
		st.explain(workers, nil, false)
		return st, nil
	}
	st.URLs = saved.URLs
	st.nodeIP, st.Joined = saved.Plan.NodeIP, saved.Plan.Joined
	if st.Joined != nil {
		st.URLs = nil // the lab's pages are the first host's
	}
	clients, err := stateDir.Connect()
	if err != nil {
		return st, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	nodes, err := clients.Ray.Nodes(pctx)
	if err != nil {
		st.Ray = "unreachable: " + err.Error()
		st.explain(workers, nil, false)
		return st, nil
	}
	st.explain(workers, nodes, true)
	st.lostHead(ctx, eng, project, workers, nodes)
	st.remote(nodes)
	return st, nil
}

// remote lists the nodes other hosts run. A host whose nodes are all DEAD
// left (or cannot be reached): it is reported, never silently dropped.
func (st *Status) remote(nodes []ray.Node) {
	if st.nodeIP == "" {
		return // one host: every node is this host's
	}
	aliveAt := map[string]bool{}
	for _, n := range nodes {
		if n.Alive() {
			aliveAt[n.NodeIP] = true
		}
	}
	gone := map[string]bool{}
	for _, n := range nodes {
		if n.NodeIP == st.nodeIP || (st.Joined != nil && !n.IsHeadNode) {
			continue
		}
		if !n.Alive() && aliveAt[n.NodeIP] {
			continue // an old node of a restarted worker
		}
		st.Remote = append(st.Remote, RemoteNode{Host: n.NodeIP, Service: n.Labels[labels.RayNodeService], Lab: n.Labels[labels.RayNodeLab],
			Head: n.IsHeadNode, State: n.State, GPUs: n.GPUs(), NodeID: n.NodeID})
		if !n.Alive() && !gone[n.NodeIP] {
			gone[n.NodeIP] = true
			st.Notes = append(st.Notes, fmt.Sprintf("host %s: Ray lists its nodes DEAD: that host left the lab or cannot be reached (its 'mltrain join' can be run again)", n.NodeIP))
		}
	}
	sort.Slice(st.Remote, func(i, j int) bool {
		a, b := st.Remote[i], st.Remote[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Service < b.Service
	})
}

func (st *Status) readContainers(ctx context.Context, eng docker.Engine, project string) (map[string]WorkerContainer, error) {
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return nil, fmt.Errorf("list the containers of lab %q: %w", project, err)
	}
	workers := map[string]WorkerContainer{}
	for _, c := range list {
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("inspect container %s: %w", c.Name, err)
		}
		s := ServiceStatus{Service: c.Labels[labels.Service], Container: c.Name, Role: c.Labels[labels.Role],
			State: d.State, Health: d.Health, Image: c.Image}
		if idx, err := strconv.Atoi(c.Labels[labels.WorkerIndex]); err == nil {
			w := WorkerContainer{Index: idx, Project: project, ContainerDetails: d}
			workers[s.Service] = w
			s.WorkerIndex = &idx
			s.GPU = c.Labels[labels.GPUUUID]
			if s.GPU == "" && c.Labels[labels.Accelerator] == plan.AccelCPU {
				s.GPU = "cpu (logical)"
			}
			if ips := w.IPs(); len(ips) > 0 {
				s.IP = ips[0]
			}
		}
		st.Services = append(st.Services, s)
	}
	sort.Slice(st.Services, func(i, j int) bool { return st.Services[i].Service < st.Services[j].Service })
	return workers, nil
}

// readPlan finds the planned services and the missing ones in state.json,
// the one record of which services the lab has: up and join write the plan
// there before starting anything (compose.yaml is rendered from it, and is
// also rewritten by a render that changes no lab), and mark it ready last.
func (st *Status) readPlan(dir state.Dir) (state.State, bool) {
	var s state.State
	if err := dir.ReadJSON(state.StateFile, &s); state.IsMissing(err) {
		st.Notes = append(st.Notes, fmt.Sprintf("no lab state in %s (no %s): which services the lab should have is unknown", dir.Path(), state.StateFile))
		return state.State{}, false
	} else if err != nil {
		st.stateErr = dir.UnreadableState(err)
		st.Notes = append(st.Notes, fmt.Sprintf("cannot read the planned services: %v", err))
		return state.State{}, false
	}
	st.Planned, st.PlanSource = s.Plan.Services(), state.StateFile
	have := map[string]bool{}
	for _, s := range st.Services {
		have[s.Service] = true
	}
	for _, s := range st.Planned {
		if !have[s] {
			st.Missing = append(st.Missing, s)
		}
	}
	sort.Strings(st.Missing)
	if len(st.Missing) > 0 {
		why := ""
		if s.UpAt.IsZero() {
			why = " (an up that did not finish)"
		}
		st.Notes = append(st.Notes, fmt.Sprintf("%s plans %d service(s) with no container: %s%s",
			st.PlanSource, len(st.Missing), strings.Join(st.Missing, ", "), why))
		st.next("up")
	}
	return s, true
}

// explain puts each worker's Ray state beside its container's and says
// where they disagree; nodes is Ray's node list (asked is false when Ray
// could not be asked).
func (st *Status) explain(workers map[string]WorkerContainer, nodes []ray.Node, asked bool) {
	now := time.Now()
	pairs, unpaired := MatchWorkerNodes(workers, nodes, st.nodeIP)
	var stale []string
	for _, w := range pairs {
		row := st.row(w.Service)
		if asked {
			row.RayState, row.RayStale = w.RayState, w.Stale
		}
		switch {
		case !w.Running && asked && w.Stale:
			stale = append(stale, w.Service)
			st.Notes = append(st.Notes, StaleNote(w, now))
		case !w.Running && asked:
			st.Notes = append(st.Notes, fmt.Sprintf("%s: container %s; Ray lists no ALIVE node for it", w.Service, w.State))
		case !w.Running:
			st.Notes = append(st.Notes, fmt.Sprintf("%s: container %s", w.Service, w.State))
		case asked && w.RayState != RayAlive:
			st.Notes = append(st.Notes, fmt.Sprintf("%s: container running, but Ray lists no ALIVE node at its address %s (%s)", w.Service, w.IP, w.RayState))
			st.next("logs", w.Service)
			continue
		default:
			continue
		}
		st.next("worker", "start", fmt.Sprint(w.Index))
	}
	if len(unpaired) > 0 {
		var ips []string
		for _, n := range unpaired {
			ips = append(ips, n.NodeIP)
		}
		st.Notes = append(st.Notes, fmt.Sprintf("Ray lists ALIVE worker node(s) at %s that no worker container of this lab has", strings.Join(ips, ", ")))
	}
	if !asked {
		return
	}
	st.Ray = RayCount(nodes, pairs)
	switch len(stale) {
	case 0:
	case 1:
		st.Ray += ", including the node of " + stale[0] + ", whose container is down: Ray has not noticed yet (see below)"
	default:
		st.Ray += ", including the nodes of " + strings.Join(stale, ", ") + ", whose containers are down: Ray has not noticed yet (see below)"
	}
}

func (st *Status) row(service string) *ServiceStatus {
	for i := range st.Services {
		if st.Services[i].Service == service {
			return &st.Services[i]
		}
	}
	return &ServiceStatus{}
}

// next adds the command line that runs words on this lab to Next, once.
func (st *Status) next(words ...string) {
	cmd := st.commands.Line(words...)
	for _, c := range st.Next {
		if c == cmd {
			return
		}
	}
	st.Next = append(st.Next, cmd)
}

// ErrMissingServices is returned (wrapped) by MissingError.
var ErrMissingServices = errors.New("planned services have no container")

// MissingError is the error of a lab with planned services missing, or nil.
func (st Status) MissingError() error {
	if len(st.Missing) == 0 {
		return nil
	}
	return clierr.Hintf("run '"+st.commands.Line("up")+"' to create them", "lab %q: %d planned service(s) have no container: %s (planned in %s): %w",
		st.Project, len(st.Missing), strings.Join(st.Missing, ", "), st.PlanSource, ErrMissingServices)
}
