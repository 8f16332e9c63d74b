package status_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

func worker(i int, running bool, ip string) status.WorkerContainer {
	state := "exited"
	if running {
		state = "running"
	}
	return status.WorkerContainer{Index: i, ContainerDetails: docker.ContainerDetails{
		Container: docker.Container{Name: service.WorkerService(i), State: state}, Running: running,
		FinishedAt: time.Now().Add(-4 * time.Second), Networks: map[string]string{"lab": ip}}}
}

func node(ip, state string) ray.Node {
	return ray.Node{NodeID: "n-" + ip + state, NodeIP: ip, State: state}
}

func TestMatchWorkerNodes(t *testing.T) {
	head := ray.Node{NodeID: "h", NodeIP: "10.0.0.2", IsHeadNode: true, State: "ALIVE"}
	for _, tc := range []struct {
		name     string
		workers  map[string]status.WorkerContainer
		nodes    []ray.Node
		want     map[string]string // service -> Ray state
		stale    []string
		unpaired int
	}{
		{name: "all up",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3"), "ray-worker-1": worker(1, true, "10.0.0.4")},
			nodes:   []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.4", "ALIVE")},
			want:    map[string]string{"ray-worker-0": "ALIVE", "ray-worker-1": "ALIVE"}},
		{name: "a stopped worker (no address, as on the engine) Ray has not noticed",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, false, ""), "ray-worker-1": worker(1, true, "10.0.0.4")},
			nodes:   []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.4", "ALIVE")},
			want:    map[string]string{"ray-worker-0": "ALIVE", "ray-worker-1": "ALIVE"}, stale: []string{"ray-worker-0"}},
		{name: "a stopped worker Ray has marked DEAD",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, false, ""), "ray-worker-1": worker(1, true, "10.0.0.4")},
			nodes:   []ray.Node{head, node("10.0.0.3", "DEAD"), node("10.0.0.4", "ALIVE")},
			want:    map[string]string{"ray-worker-0": status.RayNotAlive, "ray-worker-1": "ALIVE"}},
		{name: "a stopped worker whose address the engine still reports",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, false, "10.0.0.3")},
			nodes:   []ray.Node{head, node("10.0.0.3", "ALIVE")},
			want:    map[string]string{"ray-worker-0": "ALIVE"}, stale: []string{"ray-worker-0"}},
		{name: "a restarted worker: its ALIVE node wins over its old DEAD one",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3")},
			nodes:   []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.3", "DEAD")},
			want:    map[string]string{"ray-worker-0": "ALIVE"}},
		{name: "a running worker Ray does not list",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3")},
			nodes:   []ray.Node{head},
			want:    map[string]string{"ray-worker-0": status.RayAbsent}},
		{name: "two stopped, one still ALIVE in Ray",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, false, ""), "ray-worker-1": worker(1, false, "")},
			nodes:   []ray.Node{head, node("10.0.0.3", "DEAD"), node("10.0.0.4", "ALIVE")},
			want:    map[string]string{"ray-worker-0": "ALIVE", "ray-worker-1": status.RayNotAlive}, stale: []string{"ray-worker-0"}},
		{name: "an ALIVE node no container of the lab has",
			workers: map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3")},
			nodes:   []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.9", "ALIVE")},
			want:    map[string]string{"ray-worker-0": "ALIVE"}, unpaired: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pairs, unpaired := status.MatchWorkerNodes(tc.workers, tc.nodes, "")
			got := map[string]string{}
			var stale []string
			for _, p := range pairs {
				got[p.Service] = p.RayState
				if p.Stale {
					stale = append(stale, p.Service)
					assert.Contains(t, status.StaleNote(p, time.Now()), p.Service+": container exited 4s ago; Ray still lists the node ALIVE")
				}
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.stale, stale)
			assert.Len(t, unpaired, tc.unpaired)
		})
	}
}

func TestRayDeadAfterFromRaysDefaults(t *testing.T) {
	typical, longest := status.RayDeadAfter()
	assert.Equal(t, 15*time.Second, typical, "5 failed checks 3 s apart")
	assert.Equal(t, 65*time.Second, longest, "each check waiting its 10 s timeout")
}

// Ray keeps a restarted worker's old node in its list, DEAD: status counts
// the lab's current nodes and the DEAD history apart; a stopped worker's
// DEAD node is current.
func TestRayCountSetsDeadHistoryApart(t *testing.T) {
	head := ray.Node{NodeID: "h", NodeIP: "10.0.0.2", IsHeadNode: true, State: "ALIVE"}
	dead := func(id, ip string) ray.Node { return ray.Node{NodeID: id, NodeIP: ip, State: "DEAD"} }
	up := map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3"), "ray-worker-1": worker(1, true, "10.0.0.4")}
	oneDown := map[string]status.WorkerContainer{"ray-worker-0": worker(0, false, ""), "ray-worker-1": worker(1, true, "10.0.0.4")}
	for _, tc := range []struct {
		name    string
		workers map[string]status.WorkerContainer
		nodes   []ray.Node
		want    string
	}{
		{"all up", up, []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.4", "ALIVE")}, "3 of 3 nodes ALIVE"},
		{"after restarts", up, []ray.Node{head, dead("d1", "10.0.0.3"), node("10.0.0.3", "ALIVE"), dead("d2", "10.0.0.4"),
			node("10.0.0.4", "ALIVE"), dead("d3", "10.0.0.3")}, "3 of 3 nodes ALIVE (3 DEAD from earlier restarts)"},
		{"a stopped worker Ray marked DEAD", oneDown, []ray.Node{head, dead("d1", "10.0.0.3"), node("10.0.0.4", "ALIVE")}, "2 of 3 nodes ALIVE"},
		{"a stopped worker and a restart before", oneDown, []ray.Node{head, dead("d0", "10.0.0.3"), dead("d1", "10.0.0.3"), node("10.0.0.4", "ALIVE")},
			"2 of 3 nodes ALIVE (1 DEAD from earlier restarts)"},
		{"a stopped worker Ray has not noticed", oneDown, []ray.Node{head, node("10.0.0.3", "ALIVE"), node("10.0.0.4", "ALIVE"), dead("d1", "10.0.0.4")},
			"3 of 3 nodes ALIVE (1 DEAD from earlier restarts)"},
	} {
		pairs, _ := status.MatchWorkerNodes(tc.workers, tc.nodes, "")
		assert.Equal(t, tc.want, status.RayCount(tc.nodes, pairs), tc.name)
	}
}
