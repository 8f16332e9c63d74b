package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

func appWith(project, stateDir string) *app {
	a := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	a.project, a.stateDir = project, stateDir
	return a
}

// A next step is a command line mltrain takes: the lab's flags before the
// command reach it.
func TestNextStepsRun(t *testing.T) {
	dir := state.Dir(t.TempDir())
	c, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	step := appWith("ncaudit", dir.Path()).lab().Line("credentials", "--json")
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
		Credentials plan.Credentials `json:"credentials"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, c, got.Credentials)
}

// Errors' Next lines name the user's lab: after 'status --project ncaudit'
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
	b := plan.JoinBundle{Lab: "lab2", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: strings.Repeat("ab", 32),
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: "LABUSER000", S3Secret: "labsecret0", RayVersion: plan.DefaultRayVersion,
		Python: "3.12", ImageHash: "000000000000", ImageKind: "ray-rocm", PortBase: plan.DefaultRayPortBase}
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
		report(&errOut, err)
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

// A failed food11 load below lab/ names its commands as words; the Next
// line writes them for the lab the user named.
func TestDataFood11HintCarriesTheLabsFlags(t *testing.T) {
	dockertest.Engine(t) // skip only where no engine exists; CI requires one
	dir := t.TempDir()
	vol := fmt.Sprintf("mltrain-test-absent-%d", os.Getpid())
	_, _, err := runCLI(t, "--project", "lab2", "--state-dir", dir, "data", "food11", "--verify", "--volume", vol)
	var stderr bytes.Buffer
	assert.Equal(t, clierr.ExitFailure, report(&stderr, err), "%v", err)
	assert.Contains(t, stderr.String(), "Next: load it with 'mltrain --project lab2 --state-dir "+dir+" data food11 --volume "+vol+"'", stderr.String())
}
