package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/exercise"
)

func TestLabGuide(t *testing.T) {
	out, _, code := run(t, "lab", "guide")
	assert.Equal(t, 0, code)
	for _, n := range exercise.Names {
		assert.Contains(t, out, "mltrain lab "+n)
	}
	out, _, code = run(t, "lab", "guide", "--json")
	assert.Equal(t, 0, code)
	var specs []exercise.Spec
	require.NoError(t, json.Unmarshal([]byte(out), &specs))
	assert.Len(t, specs, len(exercise.Names))
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
	srv := raytest.New(t)
	srv.Token = "tok"
	srv.OnPoll = func(_ string, j *raytest.Job) {
		if j.Polls == 2 {
			j.Logs = "MLTRAIN_RESULT {\"mode\":\"plain\",\"fit_seconds\":3}\n"
			raytest.SetStatus(j, ray.Succeeded, "ok", time.Now())
		}
	}
	state := t.TempDir()
	t.Setenv("RAY_ADDRESS", srv.URL)
	t.Setenv("RAY_AUTH_TOKEN", "tok")
	out, errOut, code := run(t, "--state-dir", state, "lab", "submit", "--quick", "--poll", "1ms", "--json")
	require.Equal(t, 0, code, errOut)
	var rec exercise.Record
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	assert.True(t, rec.OK)
	assert.Equal(t, ray.Succeeded, rec.Jobs[0].Status)
	saved, err := exercise.LoadRecord(lab.StateDir(state), "submit")
	require.NoError(t, err)
	assert.True(t, saved.OK)

	// A wrong token fails (exit 1); the flag wins over RAY_AUTH_TOKEN.
	t.Setenv("RAY_AUTH_TOKEN", "nope")
	_, _, code = run(t, "--state-dir", state, "lab", "submit", "--poll", "1ms")
	assert.Equal(t, 1, code)
	_, _, code = run(t, "--state-dir", state, "lab", "submit", "--poll", "1ms", "--ray-token", "tok")
	assert.Equal(t, 0, code)
	assert.Len(t, srv.JobIDs(), 2, "the rejected run submitted nothing")
}

// Without flags or variables the exercises reach the lab recorded in the
// state dir with its own token; RAY_ADDRESS replaces only the address.
func TestLabReachesTheLabInTheStateDir(t *testing.T) {
	srv := raytest.New(t)
	srv.OnPoll = func(_ string, j *raytest.Job) {
		j.Logs = "MLTRAIN_RESULT {\"mode\":\"plain\",\"fit_seconds\":3}\n"
		raytest.SetStatus(j, ray.Succeeded, "ok", time.Now())
	}
	dir := lab.StateDir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	srv.Token = creds.RayAuthToken
	require.NoError(t, dir.SaveState(lab.State{Project: "envlab", Plan: lab.Plan{Project: "envlab"},
		Probes: lab.Probes{Ray: srv.URL, MinIO: "http://127.0.0.1:1"}}))
	t.Setenv("RAY_ADDRESS", "")
	t.Setenv("RAY_AUTH_TOKEN", "")
	_, errOut, code := run(t, "--state-dir", dir.Path(), "lab", "submit", "--quick", "--poll", "1ms")
	require.Equal(t, 0, code, errOut)
	require.Len(t, srv.JobIDs(), 1, "submitted to the lab's Ray with the lab's token")

	other := raytest.New(t)
	other.Token, other.OnPoll = creds.RayAuthToken, srv.OnPoll
	t.Setenv("RAY_ADDRESS", other.URL)
	_, errOut, code = run(t, "--state-dir", dir.Path(), "lab", "submit", "--quick", "--poll", "1ms")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, other.JobIDs(), 1, "RAY_ADDRESS won, with the lab's token")
	assert.Len(t, srv.JobIDs(), 1)
}
