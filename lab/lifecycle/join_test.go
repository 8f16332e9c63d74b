package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
	"github.com/mltrain/mltrain/lab/verify"
)

// twoHosts is a lab that accepts other hosts, up on this machine's network,
// and a second "host": a network namespace of its own that reaches the first
// host only at its address.
type twoHosts struct {
	eng    docker.Engine
	first  lifecycle.UpOptions
	host2  labtest.SecondHost
	worker string // the stand-in worker image
	nodeIP string
}

func newTwoHosts(t *testing.T) *twoHosts {
	eng := dockertest.Engine(t)
	nodeIP := labtest.NodeIP(t)
	// Two workers: with the head, three Ray nodes share this host's address
	// and its Ray temp dir, and must start one after another.
	o := labtest.JoinableOptions(t, eng, "mltj", nodeIP, 2)
	th := &twoHosts{eng: eng, nodeIP: nodeIP, host2: labtest.NewSecondHost(t, eng, "mltj-host2"),
		worker: o.Images[service.RoleWorker], first: lifecycle.UpOptions{StateDir: state.Dir(t.TempDir()), Lab: o,
			Images: images.Options{Pull: images.PullNever}, Timeout: 3 * time.Minute, StopTimeout: 2 * time.Second}}
	// The stand-in head marks a silent node DEAD after 5 s (Ray: ~15 s).
	require.NoError(t, th.first.StateDir.Ensure())
	require.NoError(t, os.WriteFile(th.first.StateDir.File(compose.OverrideFile),
		[]byte("services:\n  ray-head:\n    environment:\n      STANDIN_RAY_DEAD_AFTER: 5s\n"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := lifecycle.Up(ctx, th.deps(nodeIP), th.first)
	require.NoError(t, err)
	return th
}

func (th *twoHosts) deps(nodeIP string) lifecycle.UpDeps {
	return lifecycle.UpDeps{Engine: th.eng, Detect: func(context.Context) (host.Facts, error) {
		f := labtest.RehearsalFacts()
		f.NodeIP = nodeIP
		return f, nil
	}}
}

// joinOptions join the second host as project, its workers in its namespace.
func (th *twoHosts) joinOptions(t *testing.T, project string, b plan.JoinBundle) lifecycle.JoinRunOptions {
	dir := state.Dir(t.TempDir())
	require.NoError(t, dir.Ensure())
	require.NoError(t, os.WriteFile(dir.File(compose.OverrideFile),
		[]byte("services:\n  ray-worker-0:\n    network_mode: container:"+th.host2.Name+"\n"), 0o600))
	t.Cleanup(func() {
		_, _ = compose.Down(context.Background(), th.eng, project, time.Second, true, nil)
		_ = th.eng.VolumeRemove(context.Background(), project+"-food11")
	})
	return lifecycle.JoinRunOptions{StateDir: dir, Bundle: b, Images: images.Options{Pull: images.PullNever}, Timeout: 2 * time.Minute, StopTimeout: 2 * time.Second,
		Join: plan.JoinOptions{Project: project, AllowCPU: true, Workers: 1, WorkerImage: th.worker, DataVolume: project + "-food11"}}
}

func (th *twoHosts) containers(t *testing.T, project string) []docker.Container {
	list, err := th.eng.ContainerList(context.Background(), map[string]string{labels.Project: project})
	require.NoError(t, err)
	return list
}

func TestJoinASecondHost(t *testing.T) {
	th := newTwoHosts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	b, err := th.first.StateDir.MakeJoinBundle()
	require.NoError(t, err)
	assert.Equal(t, th.nodeIP, b.HeadIP)
	project := strings.ReplaceAll(dockertest.UniqueName(t, "mltj2"), "_", "-")
	o := th.joinOptions(t, project, b)

	// Refused before anything starts: another token, a port the head does
	// not answer on, another Ray.
	for name, bad := range map[string]func(plan.JoinBundle) plan.JoinBundle{
		"wrong token":   func(b plan.JoinBundle) plan.JoinBundle { b.RayToken = strings.Repeat("0", 64); return b },
		"closed port":   func(b plan.JoinBundle) plan.JoinBundle { b.GCSPort = portstest.FreePorts(t, 1)[0]; return b },
		"other Ray":     func(b plan.JoinBundle) plan.JoinBundle { b.RayVersion = "2.53.0"; return b },
		"wrong address": func(b plan.JoinBundle) plan.JoinBundle { b.HeadIP = "192.0.2.1"; return b },
	} {
		bo := o
		bo.Bundle = bad(b)
		_, err := lifecycle.Join(ctx, th.deps(th.host2.IP), bo)
		require.Error(t, err, name)
		assert.NotEmpty(t, clierr.Hint(err), name)
		assert.Empty(t, th.containers(t, project), "%s: nothing started", name)
		switch name {
		case "wrong token":
			assert.Contains(t, err.Error(), "refuses the join bundle's Ray token")
			assert.Contains(t, clierr.Hint(err), "mltrain join-token")
		case "closed port", "wrong address":
			assert.Contains(t, err.Error(), "cannot reach the head's")
			assert.Contains(t, clierr.Hint(err), "allow all TCP between "+bo.Bundle.HeadIP)
		case "other Ray":
			assert.Contains(t, err.Error(), "2.53.0")
		}
	}

	// A driver on the first host's head (a job's entrypoint) is handed any
	// ALIVE node at the host's address by Ray; it can open each one's raylet.
	proj, err := compose.Load(ctx, th.first.StateDir.Path())
	require.NoError(t, err)
	container := func(service string) string {
		s, err := proj.GetService(service)
		require.NoError(t, err)
		return compose.ContainerName(proj, s)
	}
	head := container(service.HeadService)
	drv, err := th.eng.Exec(ctx, head, []string{"/app", "driver"})
	require.NoError(t, err)
	assert.Equal(t, 0, drv.ExitCode, "%s%s", drv.Stdout, drv.Stderr)
	assert.Contains(t, drv.Stdout, "3 nodes at "+th.nodeIP+", 0 unreachable", drv.Stderr)

	res, err := lifecycle.Join(ctx, th.deps(th.host2.IP), o)
	require.NoError(t, err)
	require.Len(t, res.Nodes, 1)
	assert.Equal(t, th.host2.IP, res.Nodes[0].NodeIP, "the node advertises the second host's address")
	assert.False(t, res.HasData)
	assert.Len(t, res.Apply.Created, 1)

	// Idempotent.
	res, err = lifecycle.Join(ctx, th.deps(th.host2.IP), o)
	require.NoError(t, err)
	assert.Empty(t, append(append(res.Apply.Created, res.Apply.Recreated...), res.Apply.Started...))

	// The first host lists the second host's worker; the second host lists
	// its own worker and the lab it joined.
	st, err := status.Get(ctx, th.eng, nextstep.CommandsFor(th.first.Lab.Project, th.first.StateDir))
	require.NoError(t, err)
	require.Len(t, st.Remote, 1, "%+v", st)
	assert.Equal(t, th.host2.IP, st.Remote[0].Host)
	assert.Equal(t, "ALIVE", st.Remote[0].State)
	assert.Equal(t, "ray-worker-0", st.Remote[0].Service)
	st2, err := status.Get(ctx, th.eng, nextstep.CommandsFor(project, o.StateDir))
	require.NoError(t, err)
	require.NotNil(t, st2.Joined)
	assert.Equal(t, th.first.Lab.Project, st2.Joined.Lab)
	assert.Empty(t, st2.Missing)
	require.Len(t, st2.Services, 1)
	assert.Equal(t, "ALIVE", st2.Services[0].RayState)

	// verify on the first host lists the joined node and counts its GPU.
	d, err := verify.System(th.eng, th.first.StateDir, verify.SystemOptions{Host: host.Options{Root: "../internal/gpu/testdata/none"}})
	require.NoError(t, err)
	th.host2.RouteFrom(t, container(service.PrometheusService))
	rep := verify.Run(ctx, d, verify.Options{Only: []string{verify.GroupRay, verify.GroupGPU, verify.GroupMetrics}})
	seen := 0
	for _, c := range rep.Checks {
		switch c.ID {
		case "ray.nodes":
			seen++
			assert.Equal(t, verify.Pass, c.Status, c.Evidence)
			assert.Contains(t, c.Evidence, "joined host "+th.host2.IP+": ray-worker-0 1 GPU")
		case "metrics.prometheus":
			// Prometheus found the joined node in Ray's service discovery
			// and scraped it at its address.
			seen++
			assert.Equal(t, verify.Pass, c.Status, c.Evidence)
			assert.Contains(t, c.Evidence, th.host2.IP)
		case "gpu.ray":
			seen++
			assert.Equal(t, verify.Pass, c.Status, c.Evidence)
			assert.Contains(t, c.Evidence, th.host2.IP+" 1", "the joined worker's GPU is counted")
		}
	}
	assert.Equal(t, 3, seen, "the three checks ran")

	// down on the second host removes only its workers; the first host then
	// reports that host's node DEAD, never silently dropped.
	removed, err := lifecycle.Down(ctx, th.eng, project, false, nil)
	require.NoError(t, err)
	assert.Len(t, removed, 1)
	assert.Len(t, th.containers(t, th.first.Lab.Project), 5+2, "the first host's lab is untouched")
	require.Eventually(t, func() bool {
		st, err := status.Get(ctx, th.eng, nextstep.CommandsFor(th.first.Lab.Project, th.first.StateDir))
		return err == nil && len(st.Remote) == 1 && st.Remote[0].State == "DEAD" &&
			strings.Contains(strings.Join(st.Notes, "\n"), fmt.Sprintf("host %s: Ray lists its nodes DEAD", th.host2.IP))
	}, 40*time.Second, time.Second)
}
