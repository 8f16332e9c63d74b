package lab

import (
	"context"

	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
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
	RayState    string `json:"ray_state,omitempty"` // ALIVE / DEAD / absent, from Ray's node list
}

// Status is `mltrain status`.
type Status struct {
	Project  string          `json:"project"`
	Services []ServiceStatus `json:"services"`
	URLs     *URLs           `json:"urls,omitempty"`
	Ray      string          `json:"ray"` // what the Ray probe said
}

// GetStatus rebuilds the lab's state from container labels, then asks Ray
// which nodes are alive (best effort: a down Ray is reported, not an error).
func GetStatus(ctx context.Context, eng docker.Engine, stateDir StateDir, project string) (Status, error) {
	st := Status{Project: project}
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return st, err
	}
	for _, c := range list {
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return st, err
		}
		s := ServiceStatus{Service: c.Labels[labels.Service], Container: c.Name, Role: c.Labels[labels.Role],
			State: d.State, Health: d.Health, Image: c.Image}
		if idx, err := strconv.Atoi(c.Labels[labels.WorkerIndex]); err == nil {
			s.WorkerIndex = &idx
			s.GPU = c.Labels[labels.GPUUUID]
			if s.GPU == "" && c.Labels[labels.Accelerator] == AccelCPU {
				s.GPU = "cpu (logical)"
			}
			for _, ip := range d.Networks {
				s.IP = ip
			}
		}
		st.Services = append(st.Services, s)
	}
	sort.Slice(st.Services, func(i, j int) bool { return st.Services[i].Service < st.Services[j].Service })

	state, err := stateDir.State()
	if err != nil {
		st.Ray = "unknown: no lab state (run 'mltrain up')"
		return st, nil
	}
	st.URLs = &state.URLs
	clients, err := stateDir.Connect()
	if err != nil {
		return st, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	nodes, err := clients.Ray.Nodes(pctx)
	if err != nil {
		st.Ray = "unreachable: " + err.Error()
		return st, nil
	}
	byIP := map[string]string{}
	alive := 0
	for _, n := range nodes {
		if n.Alive() {
			alive++
		}
		if byIP[n.NodeIP] != "ALIVE" { // a restarted worker keeps its IP: ALIVE wins over an old DEAD entry
			byIP[n.NodeIP] = n.State
		}
	}
	for i := range st.Services {
		if s := &st.Services[i]; s.WorkerIndex != nil {
			s.RayState = byIP[s.IP]
			if s.RayState == "" {
				s.RayState = "absent"
			}
		}
	}
	st.Ray = fmt.Sprintf("%d of %d nodes ALIVE", alive, len(nodes))
	return st, nil
}
