package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

// headRestartOverride: the workers' raylets give up on a silent GCS after
// 10 s (Ray: gcs_rpc_server_reconnect_timeout_s, 60 s).
const headRestartOverride = "services:\n" +
	"  ray-worker-0:\n    environment:\n      RAY_gcs_rpc_server_reconnect_timeout_s: \"10\"\n" +
	"  ray-worker-1:\n    environment:\n      RAY_gcs_rpc_server_reconnect_timeout_s: \"10\"\n"

func (s *standin) status(t *testing.T) status.Status {
	t.Helper()
	stdout, stderr, code := runBin(t, binRun{args: append([]string{"status", "--json"}, s.lab()...), env: s.env})
	// 1 is status's verdict while a planned service is not running (a
	// worker Docker is restarting); its JSON is printed either way.
	require.Contains(t, []int{0, 1}, code, stderr)
	var st status.Status
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	return st
}

func workersAlive(st status.Status) int {
	n := 0
	for _, svc := range st.Services {
		if svc.WorkerIndex != nil && svc.State == "running" && svc.RayState == "ALIVE" {
			n++
		}
	}
	return n
}

// `docker restart` of the head on a stand-in lab: a new Ray cluster that
// lists only the head. status says the workers lost their head while their
// containers run on; then their raylets exit (ray start --block exits 1),
// Docker's restart policy starts them again, and the lab is whole without
// anyone running a command. A worker the user stopped stays stopped.
func TestHeadRestartTheWorkersRejoin(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(s.stateDir).File(compose.OverrideFile), []byte(headRestartOverride), 0o600))
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)
	require.Equal(t, 2, workersAlive(s.status(t)))

	head := s.project + "-" + service.HeadService
	out, err := exec.Command("docker", "restart", "-t", "2", head).CombinedOutput()
	require.NoError(t, err, "docker restart %s: %s", head, out)

	var st status.Status
	if !assert.Eventually(t, func() bool {
		st = s.status(t)
		return len(st.LostHead) == 2
	}, 30*time.Second, 500*time.Millisecond) {
		t.Fatalf("status never said the workers lost their head; last: %+v", st)
	}
	assert.Equal(t, []string{"ray-worker-0", "ray-worker-1"}, st.LostHead)
	assert.Contains(t, st.Ray, "1 of 1 nodes ALIVE; the workers lost their head")
	require.NotEmpty(t, st.Next)
	assert.Contains(t, st.Next[0], " up", "mltrain up of this lab heals it")
	text, _, _ := runBin(t, binRun{args: append([]string{"status"}, s.lab()...), env: s.env})
	assert.Contains(t, text, "ray-worker-0, ray-worker-1 lost their head")

	// The raylets give up; Docker starts the containers again; they join.
	if !assert.Eventually(t, func() bool {
		st = s.status(t)
		return workersAlive(st) == 2 && len(st.LostHead) == 0
	}, 90*time.Second, time.Second) {
		t.Fatalf("the workers never rejoined the restarted head; last: %+v", st)
	}
	assert.Equal(t, "3 of 3 nodes ALIVE", st.Ray)
	ctx := context.Background()
	hd, err := s.eng.ContainerInspect(ctx, head)
	require.NoError(t, err)
	for _, w := range []string{"ray-worker-0", "ray-worker-1"} {
		d, err := s.eng.ContainerInspect(ctx, s.project+"-"+w)
		require.NoError(t, err)
		assert.True(t, d.StartedAt.After(hd.StartedAt), "%s was started again after the head", w)
	}

	// A worker the user stops is not restarted by the policy.
	_, stderr, code = runBin(t, binRun{args: append([]string{"worker", "stop", "0"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, stderr)
	time.Sleep(3 * time.Second) // Docker's first restart comes 100 ms after an exit
	d, err := s.eng.ContainerInspect(ctx, s.project+"-ray-worker-0")
	require.NoError(t, err)
	assert.False(t, d.Running, "a stopped worker stays stopped (state %s)", d.State)
}
