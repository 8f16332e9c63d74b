package lifecycle

import (
	"context"

	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab"
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
func GetStatus(ctx context.Context, eng docker.Engine, stateDir, project string) (Status, error) {
	st := Status{Project: project}
	list, err := eng.ContainerList(ctx, map[string]string{compose.LabelProject: project})
	if err != nil {
		return st, err
	}
	for _, c := range list {
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return st, err
		}
		s := ServiceStatus{Service: c.Labels[compose.LabelService], Container: c.Name, Role: c.Labels[compose.LabelRole],
			State: d.State, Health: d.Health, Image: c.Image}
		if idx, err := strconv.Atoi(c.Labels[compose.LabelWorkerIndex]); err == nil {
			s.WorkerIndex = &idx
			s.GPU = c.Labels[compose.LabelGPUUUID]
			if s.GPU == "" && c.Labels[compose.LabelAccelerator] == lab.AccelCPU {
				s.GPU = "cpu (logical)"
			}
			for _, ip := range d.Networks {
				s.IP = ip
			}
		}
		st.Services = append(st.Services, s)
	}
	sort.Slice(st.Services, func(i, j int) bool { return st.Services[i].Service < st.Services[j].Service })

	state, err := LoadState(stateDir)
	if err != nil {
		st.Ray = "unknown: no lab state (run 'mltrain up')"
		return st, nil
	}
	st.URLs = &state.URLs
	creds, err := lab.LoadOrCreateCredentials(stateDir)
	if err != nil {
		return st, err
	}
	rc, err := ray.New(ray.Options{Address: state.Probes.Ray, Token: creds.RayAuthToken, TokenSource: credsPath(stateDir)})
	if err != nil {
		return st, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	nodes, err := rc.Nodes(pctx)
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

// Down removes the lab's containers and network; volumes only with
// removeVolumes (the dataset volume is external and always kept).
func Down(ctx context.Context, eng docker.Engine, project string, removeVolumes bool, rep progress.Reporter) ([]string, error) {
	// Ray needs a few seconds after SIGTERM to leave the cluster cleanly.
	return compose.Down(ctx, eng, project, 30*time.Second, removeVolumes, rep)
}

// Logs writes a service's logs (every service's, prefixed, when service is "").
func Logs(ctx context.Context, eng docker.Engine, project, service string, follow bool, tail string, stdout, stderr io.Writer) error {
	labels := map[string]string{compose.LabelProject: project}
	if service != "" {
		labels[compose.LabelService] = service
	}
	list, err := eng.ContainerList(ctx, labels)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		if service != "" {
			return clierr.Hintf("run 'mltrain status' to see the lab's services", "lab %q has no service %q", project, service)
		}
		return clierr.Hintf("run 'mltrain up'", "lab %q has no containers", project)
	}
	if len(list) > 1 && follow {
		return clierr.Hintf("name one service, e.g. 'mltrain logs ray-head -f'", "-f follows one service at a time")
	}
	for _, c := range list {
		if len(list) > 1 {
			fmt.Fprintf(stdout, "==> %s <==\n", c.Name)
		}
		if err := eng.ContainerLogs(ctx, c.ID, docker.LogsOptions{Tail: tail, Follow: follow}, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// Worker finds worker index's container.
func Worker(ctx context.Context, eng docker.Engine, project string, index int) (docker.Container, error) {
	list, err := eng.ContainerList(ctx, map[string]string{compose.LabelProject: project, compose.LabelRole: string(lab.RoleWorker)})
	if err != nil {
		return docker.Container{}, err
	}
	var have []string
	for _, c := range list {
		if c.Labels[compose.LabelWorkerIndex] == strconv.Itoa(index) {
			return c, nil
		}
		have = append(have, c.Labels[compose.LabelWorkerIndex])
	}
	sort.Strings(have)
	return docker.Container{}, clierr.Hintf("run 'mltrain status' to see the workers",
		"lab %q has no worker %d (workers: %v)", project, index, have)
}

// StopWorker stops worker index gracefully (the fault-tolerance exercise's
// "docker stop ray-worker-N"); StartWorker starts it again.
func StopWorker(ctx context.Context, eng docker.Engine, project string, index int) (string, error) {
	c, err := Worker(ctx, eng, project, index)
	if err != nil {
		return "", err
	}
	return c.Name, eng.ContainerStop(ctx, c.ID, 30*time.Second)
}

// StartWorker starts worker index again and waits until it is healthy.
func StartWorker(ctx context.Context, eng docker.Engine, project string, index int) (string, error) {
	c, err := Worker(ctx, eng, project, index)
	if err != nil {
		return "", err
	}
	if err := eng.ContainerStart(ctx, c.ID); err != nil {
		return c.Name, err
	}
	if err := compose.WaitHealthy(ctx, eng, c.Name, 3*time.Minute); err != nil {
		return c.Name, err
	}
	return c.Name, nil
}
