package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// verifyJSON runs verify --json with engine as the Docker engine (nil: none
// reachable) and decodes what it printed on stdout.
func verifyJSON(t *testing.T, engine docker.Engine, args ...string) (map[string]any, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	a.connect = func(context.Context) (docker.Engine, error) {
		if engine == nil {
			return nil, clierr.Hintf("start Docker, or set DOCKER_HOST", "cannot reach the Docker engine: %w", errors.New("connection refused"))
		}
		return engine, nil
	}
	root := a.root()
	root.SetArgs(append([]string{"verify", "--json"}, args...))
	err := root.ExecuteContext(context.Background())
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "stdout is JSON: %q (stderr %q)", out.String(), errOut.String())
	return got, err
}

// verify --json prints JSON on stdout however it ends: an error object
// (ok false, the error, the next command with this lab's flags) when it
// fails before its checks, with the exit status it had.
func TestVerifyJSONAlwaysPrintsJSON(t *testing.T) {
	got, err := verifyJSON(t, fake.New(), "--only", "ray,gpus")
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Equal(t, false, got["ok"])
	assert.Contains(t, got["error"], `--only "gpus" is not a check group`)
	assert.Contains(t, got["next"], "--only ray,minio")

	dir := t.TempDir()
	got, err = verifyJSON(t, fake.New(), "--project", "vj", "--state-dir", dir)
	assert.Equal(t, 1, clierr.Code(err))
	assert.Equal(t, map[string]any{"project": "vj", "ok": false, "error": err.Error(), "next": got["next"], "reason": "no-lab"}, got)
	assert.Contains(t, got["error"], "no lab state")
	assert.Contains(t, got["next"], "mltrain --project vj --state-dir "+dir+" up", "the next command names this lab")

	got, err = verifyJSON(t, nil, "--project", "vj")
	assert.Equal(t, 1, clierr.Code(err))
	assert.Equal(t, "cannot reach the Docker engine: connection refused", got["error"])
	assert.Equal(t, "start Docker, or set DOCKER_HOST", got["next"])
}

// A --junit path that cannot be written fails verify after its report is
// printed: --json still prints the report, checks and all.
func TestVerifyJSONKeepsTheReportWhenJUnitFails(t *testing.T) {
	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	dead := "http://127.0.0.1:1"
	require.NoError(t, dir.SaveState(state.State{Project: "vj", Plan: plan.Plan{Project: "vj", Mode: plan.ModeCPU, Credentials: creds},
		Probes: plan.Probes{Ray: dead, MinIO: dead, Grafana: dead, Prometheus: dead, Jupyter: dead}}))
	got, err := verifyJSON(t, fake.New(), "--project", "vj", "--state-dir", dir.Path(), "--only", "ray",
		"--junit", filepath.Join(dir.Path(), "no", "such", "dir.xml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--junit")
	assert.Equal(t, false, got["ok"])
	assert.NotContains(t, got, "error", "the report, not an error object")
	assert.NotEmpty(t, got["checks"])
}

// verify --html FILE says where it wrote the page: after the table, or on
// stderr beside --json (stdout stays JSON).
func TestVerifyHTMLSaysWhereItWrote(t *testing.T) {
	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	dead := "http://127.0.0.1:1"
	require.NoError(t, dir.SaveState(state.State{Project: "vh", Plan: plan.Plan{Project: "vh", Mode: plan.ModeCPU, Credentials: creds},
		Probes: plan.Probes{Ray: dead, MinIO: dead, Grafana: dead, Prometheus: dead, Jupyter: dead}}))
	page := filepath.Join(dir.Path(), "report.html")
	for _, asJSON := range []bool{false, true} {
		var out, errOut bytes.Buffer
		a := newApp(&out, &errOut)
		a.connect = func(context.Context) (docker.Engine, error) { return fake.New(), nil }
		args := []string{"verify", "--project", "vh", "--state-dir", dir.Path(), "--only", "ray", "--html", page}
		if asJSON {
			args = append(args, "--json")
		}
		root := a.root()
		root.SetArgs(args)
		require.Error(t, root.ExecuteContext(context.Background()), "Ray is not there: the check fails")
		line := "HTML report written to " + page + "\n"
		if asJSON {
			assert.Contains(t, errOut.String(), line)
			var rep map[string]any
			assert.NoError(t, json.Unmarshal(out.Bytes(), &rep), "stdout is the JSON alone")
		} else {
			assert.True(t, strings.HasSuffix(out.String(), line), "the table, then where the page is:\n%s", out.String())
		}
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		assert.Contains(t, string(b), "<html")
		require.NoError(t, os.Remove(page))
	}
}
