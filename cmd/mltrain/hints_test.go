package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
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

// A join that fails below lab/ (a worker container that exits) tells the
// user on the second host to run join again, with the bundle's place and
// the flags given, on the same lab; up's names up.
func TestAFailedJoinNamesJoinsRerun(t *testing.T) {
	b := lab.JoinBundle{Lab: "lab2", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: strings.Repeat("ab", 32),
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: "LABUSER000", S3Secret: "labsecret0", RayVersion: lab.DefaultRayVersion,
		Python: "3.12", ImageHash: "000000000000", ImageKind: "ray-rocm", PortBase: lab.DefaultRayPortBase}
	failing := func(args ...string) (string, string) {
		var out, errOut bytes.Buffer
		a := newApp(&out, &errOut)
		a.connect = func(context.Context) (docker.Engine, error) {
			return nil, fmt.Errorf("apply: %w", &compose.ContainerFailure{Container: "lab2-ray-worker-1", Reason: "exited with code 1"})
		}
		root := a.root()
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		require.Error(t, err)
		report(&errOut, err, a.next)
		return clierr.Hint(err), errOut.String()
	}
	hint, stderr := failing("join", b.Encode(), "--workers", "2", "--share-gpu")
	assert.Equal(t, "see 'docker logs lab2-ray-worker-1' and 'docker inspect lab2-ray-worker-1', fix the cause, "+
		"then run 'mltrain --project lab2 join BUNDLE --share-gpu --workers 2' again (or 'mltrain --project lab2 status')", hint)
	assert.NotContains(t, stderr, "up'")
	assert.NotContains(t, stderr, b.RayToken, "the bundle holds the lab's secrets")
	assert.Contains(t, stderr, "Next: "+hint)

	dir := t.TempDir()
	hint, _ = failing("up", "--project", "lab2", "--state-dir", dir)
	assert.Contains(t, hint, "then run 'mltrain --project lab2 --state-dir "+dir+" up' again")
}
