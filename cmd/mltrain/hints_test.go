package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab"
)

func appWith(project, stateDir string) *app {
	a := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	a.project, a.stateDir = project, stateDir
	return a
}

func TestNextCarriesTheLabsFlags(t *testing.T) {
	a := appWith("ncaudit", "")
	for in, want := range map[string]string{
		"run 'mltrain lab guide' to see the exercises":                   "run 'mltrain --project ncaudit lab guide' to see the exercises",
		"mltrain status; mltrain logs minio":                             "mltrain --project ncaudit status; mltrain --project ncaudit logs minio",
		"'mltrain data food11' (if not done), then 'mltrain lab guide'.": "'mltrain --project ncaudit data food11' (if not done), then 'mltrain --project ncaudit lab guide'.",
		"mltrain up (it creates the bucket)":                             "mltrain --project ncaudit up (it creates the bucket)",
		"run `mltrain verify` again":                                     "run `mltrain --project ncaudit verify` again",
		"delete it and run 'mltrain down --volumes && mltrain up'":       "delete it and run 'mltrain --project ncaudit down --volumes && mltrain --project ncaudit up'",
		// already carried (a re-run line), another host's or the lab-less commands, names that only contain mltrain:
		"run 'mltrain up --project ncaudit' again to finish":                                   "run 'mltrain up --project ncaudit' again to finish",
		"produce it on the lab host with 'mltrain gpus --json > FILE'":                         "produce it on the lab host with 'mltrain gpus --json > FILE'",
		"preload: 'mltrain images load FILE'":                                                  "preload: 'mltrain images load FILE'",
		"docker stop mltrain-ray-head; docker compose -f ~/.mltrain/mltrain/compose.yaml logs": "docker stop mltrain-ray-head; docker compose -f ~/.mltrain/mltrain/compose.yaml logs",
		"the mltrain Ray lab": "the mltrain Ray lab",
		"":                    "",
	} {
		assert.Equal(t, want, a.next(in), in)
	}

	assert.Equal(t, "run 'mltrain lab guide'", appWith(lab.DefaultProject, "").next("run 'mltrain lab guide'"), "the default lab needs no flag")
	assert.Equal(t, "run 'mltrain lab guide'", appWith("Bad Name", "").next("run 'mltrain lab guide'"), "an invalid --project is not carried")
	assert.Equal(t, `run 'mltrain --project lab2 --state-dir "/srv/my labs/2" status'`,
		appWith("lab2", "/srv/my labs/2").next("run 'mltrain status'"), "a path with a space is quoted")
}

// A rewritten next step is a command line mltrain takes: the flags before
// the command reach it.
func TestNextStepsRun(t *testing.T) {
	dir := lab.StateDir(t.TempDir())
	c, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	step := appWith("ncaudit", dir.Path()).next("mltrain credentials --json")
	words := strings.Fields(step)
	require.Equal(t, "mltrain", words[0])
	assert.Equal(t, []string{"--project", "ncaudit", "--state-dir", dir.Path(), "credentials", "--json"}, words[1:])

	var out bytes.Buffer
	a := newApp(&out, &bytes.Buffer{})
	root := a.root()
	root.SetArgs(words[1:])
	require.NoError(t, root.ExecuteContext(context.Background()))
	assert.Equal(t, "ncaudit", a.project)
	var got struct {
		Credentials lab.Credentials `json:"credentials"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, c, got.Credentials)
}

// Errors' Next lines pass through next: after 'status --project ncaudit'
// on a lab that is not there, the hint targets ncaudit.
func TestErrorsNextLineCarriesTheLabsFlags(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runOffline(t, "credentials", "--project", "ncaudit", "--state-dir", dir)
	assert.Equal(t, clierr.ExitFailure, code)
	assert.Contains(t, stderr, "Next: run 'mltrain --project ncaudit --state-dir "+dir+" up' to re-create the lab", stderr)
}
