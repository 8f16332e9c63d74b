package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/verify"
)

// Every consumer of the exercises enumerates the one registry, in its
// order: shell completion, the help, the guide (text and --json), `lab all`
// and verify's checks. An exercise added to one of them alone fails here.
func TestEveryConsumerEnumeratesTheExerciseRegistry(t *testing.T) {
	want := exercise.Names()
	require.Len(t, want, 6)

	got, dir := complete(t, nil, "lab", "")
	assert.Equal(t, append(slices.Clone(want), "all", "guide"), got, "completion")
	assert.Equal(t, ":4", dir, "no file names")
	got, _ = complete(t, nil, "lab", "submit", "")
	assert.Empty(t, got, "lab takes one exercise")

	out, _, code := run(t, "lab", "--help")
	require.Equal(t, 0, code)
	m := regexp.MustCompile(`(?m)^Exercises: (.*)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, want, strings.Split(m[1], ", "), "help")

	out, _, code = run(t, "lab", "guide")
	require.Equal(t, 0, code)
	got = nil
	for _, m := range regexp.MustCompile(`\(mltrain lab (\w+)\)`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	assert.Equal(t, want, got, "guide")
	assert.Contains(t, out, "The mltrain Ray lab: six exercises.")

	out, _, code = run(t, "lab", "guide", "--json")
	require.Equal(t, 0, code)
	var specs []exercise.Spec
	require.NoError(t, json.Unmarshal([]byte(out), &specs))
	got = nil
	for _, s := range specs {
		got = append(got, s.Name)
	}
	assert.Equal(t, want, got, "guide --json")

	// lab all: every exercise runs (here each stops at the workspace, which
	// has no train.py) and leaves its record.
	srv := raytest.NewLab(t, "")
	rc, err := ray.New(ray.Options{Address: srv.URL})
	require.NoError(t, err)
	recs, err := exercise.All(context.Background(), exercise.Env{Ray: rc, Workspace: t.TempDir()}, exercise.Options{})
	require.Error(t, err)
	got = nil
	for _, r := range recs {
		got = append(got, r.Exercise)
	}
	assert.Equal(t, want, got, "lab all")

	rep := verify.Run(context.Background(), verify.Deps{Records: func() (map[string]exercise.Record, error) { return nil, nil }},
		verify.Options{Only: []string{verify.GroupExercises}})
	got = nil
	for _, c := range rep.Checks {
		got = append(got, strings.TrimPrefix(c.ID, verify.GroupExercises+"."))
	}
	assert.Equal(t, want, got, "verify")
}

func TestLabUnknownExercise(t *testing.T) {
	_, _, code := run(t, "lab", "bogus")
	assert.Equal(t, 2, code)
}

func TestLabWithoutRayAddress(t *testing.T) {
	t.Setenv("RAY_ADDRESS", "")
	t.Setenv("MLTRAIN_STATE_DIR", t.TempDir())
	_, _, code := run(t, "lab", "submit")
	assert.Equal(t, 1, code)
}

func TestLabSubmitEndToEnd(t *testing.T) {
	srv := raytest.NewLab(t, "tok")
	srv.Run = raytest.Script{End: "MLTRAIN_RESULT {\"mode\":\"plain\",\"fit_seconds\":3}\n"}.Program
	dir := t.TempDir()
	t.Setenv("RAY_ADDRESS", srv.URL)
	t.Setenv("RAY_AUTH_TOKEN", "tok")
	out, errOut, code := run(t, "--state-dir", dir, "lab", "submit", "--quick", "--poll", "1ms", "--json")
	require.Equal(t, 0, code, errOut)
	var rec exercise.Record
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	assert.True(t, rec.OK)
	assert.Equal(t, ray.Succeeded, rec.Jobs[0].Status)
	saved, err := exercise.LoadRecord(state.Dir(dir), "submit")
	require.NoError(t, err)
	assert.True(t, saved.OK)

	// A wrong token fails (exit 1); the flag wins over RAY_AUTH_TOKEN.
	t.Setenv("RAY_AUTH_TOKEN", "nope")
	_, _, code = run(t, "--state-dir", dir, "lab", "submit", "--poll", "1ms")
	assert.Equal(t, 1, code)
	_, _, code = run(t, "--state-dir", dir, "lab", "submit", "--poll", "1ms", "--ray-token", "tok")
	assert.Equal(t, 0, code)
	assert.Len(t, srv.Jobs(), 2, "the rejected run submitted nothing")
}

// The engine is required where an exercise of the registry needs it (fault,
// and so all); the others run without it.
func TestLabNeedsTheEngineWhereTheRegistrySays(t *testing.T) {
	srv := raytest.NewLab(t, "")
	t.Setenv("RAY_ADDRESS", srv.URL)
	t.Setenv("MLTRAIN_STATE_DIR", t.TempDir())
	noEngine := errors.New("docker engine at unix:///var/run/docker.sock is not reachable")
	runLab := func(args ...string) error {
		var out bytes.Buffer
		a := newApp(&out, &out)
		a.connect = func(context.Context) (docker.Engine, error) { return nil, noEngine }
		root := a.root()
		root.SetArgs(append([]string{"lab", "--workspace", t.TempDir()}, args...))
		return root.ExecuteContext(context.Background())
	}
	for _, ex := range exercise.Exercises() {
		err := runLab(ex.Name)
		require.Error(t, err, ex.Name)
		if ex.NeedsEngine {
			assert.ErrorIs(t, err, noEngine, ex.Name)
		} else {
			assert.Contains(t, err.Error(), "no train.py", "%s runs without the engine", ex.Name)
		}
	}
	assert.ErrorIs(t, runLab("all"), noEngine)
}

// Without flags or variables the exercises reach the lab recorded in the
// state dir with its own token; RAY_ADDRESS replaces only the address.
func TestLabReachesTheLabInTheStateDir(t *testing.T) {
	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	srv := raytest.NewLab(t, creds.RayAuthToken)
	srv.Run = raytest.Script{End: "MLTRAIN_RESULT {\"mode\":\"plain\",\"fit_seconds\":3}\n"}.Program
	require.NoError(t, dir.SaveState(state.State{Project: "envlab", Plan: plan.Plan{Project: "envlab"},
		Probes: plan.Probes{Ray: srv.URL, MinIO: "http://127.0.0.1:1"}}))
	t.Setenv("RAY_ADDRESS", "")
	t.Setenv("RAY_AUTH_TOKEN", "")
	_, errOut, code := run(t, "--state-dir", dir.Path(), "lab", "submit", "--quick", "--poll", "1ms")
	require.Equal(t, 0, code, errOut)
	require.Len(t, srv.Jobs(), 1, "submitted to the lab's Ray with the lab's token")

	other := raytest.NewLab(t, creds.RayAuthToken)
	other.Run = srv.Run
	t.Setenv("RAY_ADDRESS", other.URL)
	_, errOut, code = run(t, "--state-dir", dir.Path(), "lab", "submit", "--quick", "--poll", "1ms")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, other.Jobs(), 1, "RAY_ADDRESS won, with the lab's token")
	assert.Len(t, srv.Jobs(), 1)
}
