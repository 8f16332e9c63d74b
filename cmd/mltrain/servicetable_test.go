package main

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
	"github.com/mltrain/mltrain/lab/verify"
)

// A service added to the table (here, in the test, TensorBoard) is rendered,
// planned, checked by status and verify, offered by completion and logs, has
// its image flag, port and URL, with no other change anywhere.
func TestAServiceAddedToTheTableShowsEverywhere(t *testing.T) {
	saved := service.All
	t.Cleanup(func() { service.All = saved })
	service.All = append(slices.Clone(saved), service.Service{
		Name: "tensorboard", Role: "tensorboard", ImageHelp: "TensorBoard image",
		Image:       func(string, gpu.Vendor) (string, error) { return "tensorflow/tensorboard:2.20.0", nil },
		Healthcheck: []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:6006/"},
		Ports:       []service.Port{{Name: "tensorboard", Container: 6006, Host: 6006}},
		Ready:       &service.Probe{Port: "tensorboard", Path: "/"},
		Page:        &service.Page{Key: "tensorboard", Title: "TensorBoard", Port: "tensorboard"},
	})

	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	facts := host.Facts{CPUs: 8, MemoryBytes: 16 << 30, HostIP: "10.0.0.5"}
	p, err := plan.New(facts, plan.Options{Ports: map[string]int{"tensorboard": 16006}}, creds)
	require.NoError(t, err)
	assert.Equal(t, "tensorflow/tensorboard:2.20.0", p.Images["tensorboard"], "the plan takes the table's image")
	assert.Contains(t, p.Services(), "tensorboard")
	assert.Equal(t, "http://10.0.0.5:16006", plan.MakeURLs(p)["tensorboard"], "its page, on the port the user gave")

	proj, err := render.Project(p)
	require.NoError(t, err)
	tb, ok := proj.Services["tensorboard"]
	require.True(t, ok, "rendered")
	assert.Equal(t, "tensorflow/tensorboard:2.20.0", tb.Image)
	require.Len(t, tb.Ports, 1)
	assert.Equal(t, "16006", tb.Ports[0].Published)
	assert.Equal(t, uint32(6006), tb.Ports[0].Target)
	assert.Equal(t, "CMD", tb.HealthCheck.Test[0])

	// status and verify: planned, and reported missing on an engine without it.
	st := state.State{Project: p.Project, Plan: p, URLs: plan.MakeURLs(p), Probes: plan.ProbeAddrs(p)}
	require.NoError(t, dir.SaveState(st))
	eng := fake.New()
	s, err := status.Get(context.Background(), eng, nextstep.CommandsFor(p.Project, dir))
	require.NoError(t, err)
	assert.Contains(t, s.Missing, "tensorboard")
	rep := verify.Run(context.Background(), verify.Deps{State: st, StateDir: dir, Engine: eng}, verify.Options{Only: []string{verify.GroupContainers}})
	var ids []string
	for _, c := range rep.Checks {
		ids = append(ids, c.ID)
	}
	assert.Contains(t, ids, verify.GroupContainers+".tensorboard")

	checks := lifecycle.ReadyChecks(state.Clients{Plan: p, Probes: st.Probes}, eng, p.Project)
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	assert.Contains(t, names, "tensorboard", "up waits for its readiness probe")

	// completion (no engine: the table's services) and the image flag.
	cands, _ := complete(t, nil, "logs", "")
	assert.Contains(t, cands, "tensorboard")
	cands, _ = complete(t, nil, "up", "--image-")
	assert.Contains(t, cands, "--image-tensorboard")
}
