package raymodel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// prints is a driver that prints out and exits with code.
type prints struct {
	out  string
	code int
}

func (p prints) Step(d *raymodel.Driver) (bool, int) {
	d.Log(p.out)
	return true, p.code
}

func TestAFailedEntrypointsMessageCarriesItsLastTenLogLines(t *testing.T) {
	c, _, _ := lab(t, raymodel.Config{})
	var out strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&out, "line %d\n", i)
	}
	c.Run = func(j *raymodel.Job) raymodel.Program {
		if j.ID == "quiet" {
			return prints{code: 3}
		}
		return prints{out: out.String(), code: 1}
	}
	_, err := c.Submit("loud", ray.SubmitRequest{Entrypoint: "python train.py"})
	require.NoError(t, err)
	j, _ := c.Job("loud")
	require.Equal(t, ray.Failed, j.Status)
	assert.Equal(t, raymodel.ErrEntrypoint, j.ErrorType)
	assert.True(t, strings.HasSuffix(j.Message, "(truncated to 20,000 chars):\nline 20\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\n"), j.Message)
	assert.NotContains(t, j.Message, "line 19\n")
	assert.Equal(t, out.String(), j.Logs, "the log itself is whole")

	_, err = c.Submit("quiet", ray.SubmitRequest{Entrypoint: "python train.py"})
	require.NoError(t, err)
	j, _ = c.Job("quiet")
	assert.Equal(t, "Job entrypoint command failed with exit code 3. No logs available.", j.Message)
}

func TestADriverRunsOnAWorkerOnlyWhereRayAllowsIt(t *testing.T) {
	c, _, ids := lab(t, raymodel.Config{DriverOnWorkerNodes: true})
	a, err := c.Submit("a", ray.SubmitRequest{Entrypoint: "sleep 600"})
	require.NoError(t, err)
	assert.Equal(t, ids[0], a.DriverNodeID, "an idle head is the hybrid policy's first choice")
	busy, err := c.Submit("busy", ray.SubmitRequest{Entrypoint: "sleep 600", EntrypointNumCPUs: 2})
	require.NoError(t, err)
	require.Equal(t, ids[0], busy.DriverNodeID)
	b, err := c.Submit("b", ray.SubmitRequest{Entrypoint: "sleep 600"})
	require.NoError(t, err)
	assert.Equal(t, ids[1], b.DriverNodeID, "a head at the spread threshold: the first less used node")

	pinned, _, ids := lab(t, raymodel.Config{})
	_, err = pinned.Submit("busy", ray.SubmitRequest{Entrypoint: "sleep 600", EntrypointNumCPUs: 2})
	require.NoError(t, err)
	b, err = pinned.Submit("b", ray.SubmitRequest{Entrypoint: "sleep 600"})
	require.NoError(t, err)
	assert.Equal(t, ids[0], b.DriverNodeID, "Ray's default: pinned to the head")
	env := map[string]string{raymodel.EnvDriverOnWorkers: "1"}
	assert.True(t, raymodel.ConfigFromEnv(func(k string) string { return env[k] }).DriverOnWorkerNodes)
}

// On the host network the head and a host's workers share an address:
// the driver connects to whichever raylet there Ray's node list gives
// first, and train.py says which.
func TestADriverAttachesToTheFirstNodeAtItsAddress(t *testing.T) {
	for _, tc := range []struct {
		name, ip, want string
	}{
		{"own address", "10.0.0.3", "b-head"},
		{"shared address", "10.0.0.2", "a-worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1_800_000_000, 0)}
			c := raymodel.New(raymodel.Config{Now: clk.now})
			c.Join(raymodel.NodeSpec{ID: "b-head", IP: "10.0.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}})
			c.Join(raymodel.NodeSpec{ID: "a-worker", IP: tc.ip, Total: raymodel.Resources{"CPU": 32, "GPU": 1}})
			c.Run = raymodel.TrainPy{Epoch: time.Second}.Program
			_, err := c.Submit("r", ray.SubmitRequest{Entrypoint: "python train.py --mode ray --epochs 1"})
			require.NoError(t, err)
			j := run(t, c, clk, "r", nil)
			assert.Equal(t, "b-head", j.DriverNodeID, "the driver process runs on the head")
			es, _ := events(j.Logs)
			d := of(es, "driver")
			require.Len(t, d, 1, j.Logs)
			assert.Equal(t, tc.want, d[0]["node_id"])
			assert.Equal(t, "10.0.0.2", d[0]["node_ip"])
		})
	}
}

func TestSleepRunsForItsSeconds(t *testing.T) {
	c, clk, _ := lab(t, raymodel.Config{})
	c.Run = raymodel.TrainPy{}.Program
	_, err := c.Submit("s", ray.SubmitRequest{Entrypoint: "sleep 30"})
	require.NoError(t, err)
	clk.add(29 * time.Second)
	j, _ := c.Job("s")
	assert.Equal(t, ray.Running, j.Status)
	clk.add(time.Second)
	j, _ = c.Job("s")
	assert.Equal(t, ray.Succeeded, j.Status)
}
