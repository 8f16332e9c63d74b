package lifecycle_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

func gpuNode(id, ip, state string, l map[string]string) ray.Node {
	return ray.Node{NodeID: id, NodeIP: ip, State: state, Labels: l, ResourcesTotal: map[string]float64{"GPU": 1}}
}

// A recreated worker's node gets a new id; Ray keeps the old one listed,
// DEAD once its health checks fail. Each planned worker counts once, by its
// container, and a DEAD node never counts.
func TestCountRayNodesCountsEachWorkerOnce(t *testing.T) {
	plan := plan.Plan{Workers: []plan.Worker{{Index: 0, Service: "ray-worker-0"}}}
	head := ray.Node{NodeID: "h", NodeIP: "10.0.0.2", IsHeadNode: true, State: "ALIVE"}
	running := map[string]status.WorkerContainer{"ray-worker-0": worker(0, true, "10.0.0.3")}
	for _, tc := range []struct {
		name        string
		nodes       []ray.Node
		workers     int
		registering []string
		problems    []string
	}{
		{name: "old DEAD and new ALIVE at the same address",
			nodes: []ray.Node{head, gpuNode("old", "10.0.0.3", "DEAD", nil), gpuNode("new", "10.0.0.3", "ALIVE", nil)}, workers: 1},
		{name: "old DEAD at its old address, new ALIVE at the container's",
			nodes: []ray.Node{head, gpuNode("old", "10.0.0.9", "DEAD", nil), gpuNode("new", "10.0.0.3", "ALIVE", nil)}, workers: 1},
		{name: "only the old DEAD node",
			nodes: []ray.Node{head, gpuNode("old", "10.0.0.3", "DEAD", nil)}, workers: 0, registering: []string{"ray-worker-0"}},
		{name: "the old node not DEAD yet beside the new one",
			nodes: []ray.Node{head, gpuNode("old", "10.0.0.9", "ALIVE", nil), gpuNode("new", "10.0.0.3", "ALIVE", nil)}, workers: 1,
			problems: []string{"Ray lists an ALIVE worker node at 10.0.0.9 (old) that no worker container of this lab has: a replaced worker's old node, which Ray marks DEAD in ~15s (up to ~65s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := lifecycle.CountRayNodes(plan, running, tc.nodes)
			assert.Equal(t, 1, rc.Heads)
			assert.Equal(t, tc.workers, rc.Workers)
			assert.Equal(t, float64(tc.workers), rc.GPUs)
			assert.Equal(t, tc.registering, rc.Registering)
			assert.Equal(t, tc.problems, rc.Problems)
		})
	}

	// Nodes that span hosts share the host's address: their labels say
	// which container each is.
	host := plan
	host.NodeIP = "192.168.1.5"
	l := map[string]string{labels.RayNodeLab: "", labels.RayNodeService: "ray-worker-0"}
	headHost := ray.Node{NodeID: "h", NodeIP: host.NodeIP, IsHeadNode: true, State: "ALIVE"}
	rc := lifecycle.CountRayNodes(host, running, []ray.Node{headHost, gpuNode("old", host.NodeIP, "DEAD", l), gpuNode("new", host.NodeIP, "ALIVE", l)})
	assert.Equal(t, 1, rc.Workers, "%v", rc.Problems)
	assert.Empty(t, rc.Problems)
	rc = lifecycle.CountRayNodes(host, running, []ray.Node{headHost, gpuNode("old", host.NodeIP, "DEAD", l)})
	assert.Equal(t, 0, rc.Workers)
	assert.Equal(t, []string{"ray-worker-0"}, rc.Registering)
}

// up's Ray check on Ray's double and the fake engine: after worker 1 was
// recreated, the list holds its old DEAD node and its new ALIVE one; that
// is 2 of 2 workers, never "3 of 2". With only the DEAD one it waits.
func TestUpRayCheckIgnoresAReplacedWorkersDeadNode(t *testing.T) {
	const project = "rready"
	creds, _, err := state.Dir(t.TempDir()).CreateCredentials()
	require.NoError(t, err)
	plan, err := plan.New(labtest.RehearsalFacts(), plan.Options{Project: project}, creds)
	require.NoError(t, err)
	require.Len(t, plan.Workers, 2)
	eng := fake.New()
	for _, w := range plan.Workers {
		eng.AddContainer(docker.ContainerDetails{Container: docker.Container{Name: project + "-" + w.Service, State: "running",
			Labels: map[string]string{labels.Project: project, labels.Service: w.Service, labels.Role: labels.RoleWorker, labels.WorkerIndex: strconv.Itoa(w.Index)}},
			Running: true, Networks: map[string]string{project + "_default": fmt.Sprintf("172.20.0.%d", 3+w.Index)}})
	}
	// Each case is a Ray whose raylets registered (a DEAD one: long since
	// silent) as the rows say.
	run := func(nodes ...ray.Node) (string, error) {
		rs := raytest.NewModel(t, raymodel.Config{}, "")
		rs.JoinNodes(nodes...)
		rc, err := ray.New(ray.Options{Address: rs.URL})
		require.NoError(t, err)
		check := lifecycle.ReadyChecks(state.Clients{Plan: plan, Ray: rc}, eng, project)[1]
		require.Equal(t, "ray", check.Name)
		return check.Run(context.Background())
	}

	head := ray.Node{NodeID: "h", NodeIP: "172.20.0.2", IsHeadNode: true, State: "ALIVE"}
	w0 := gpuNode("w0", "172.20.0.3", "ALIVE", nil)
	detail, err := run(head, w0, gpuNode("w1-old", "172.20.0.4", "DEAD", nil), gpuNode("w1-new", "172.20.0.4", "ALIVE", nil))
	require.NoError(t, err)
	assert.Equal(t, "Ray 2.54.0: 1 head + 2 workers ALIVE, 2 GPUs", detail)

	_, err = run(head, w0, gpuNode("w1-old", "172.20.0.4", "DEAD", nil))
	assert.EqualError(t, err, "the Ray 2.54.0 cluster sees 1 head(s), 1 of 2 workers, 1 of 2 GPUs alive")

	// The old node not yet DEAD, the new one not registered yet: 2 ALIVE
	// worker nodes, but worker 1's container has none.
	_, err = run(head, w0, gpuNode("w1-old", "172.20.0.9", "ALIVE", nil))
	assert.ErrorContains(t, err, "sees 1 head(s), 1 of 2 workers, 1 of 2 GPUs alive: Ray lists an ALIVE worker node at 172.20.0.9 (w1-old)")

	// The old node not yet DEAD at another address: counted once, and the
	// check waits for Ray to mark it, as verify's ray.nodes fails on it.
	_, err = run(head, w0, gpuNode("w1-old", "172.20.0.9", "ALIVE", nil), gpuNode("w1-new", "172.20.0.4", "ALIVE", nil))
	assert.ErrorContains(t, err, "sees 1 head(s), 2 of 2 workers, 2 of 2 GPUs alive: Ray lists an ALIVE worker node at 172.20.0.9 (w1-old)")
}

func worker(i int, running bool, ip string) status.WorkerContainer {
	state := "exited"
	if running {
		state = "running"
	}
	return status.WorkerContainer{Index: i, ContainerDetails: docker.ContainerDetails{
		Container: docker.Container{Name: service.WorkerService(i), State: state}, Running: running,
		FinishedAt: time.Now().Add(-4 * time.Second), Networks: map[string]string{"lab": ip}}}
}
