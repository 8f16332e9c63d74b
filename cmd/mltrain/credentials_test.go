package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// A lab whose credentials.json is gone: every command that reads the lab
// fails naming the file and what to do, and none of them mints new secrets
// (which the running lab would not know).
func TestMissingCredentialsAreNeverMinted(t *testing.T) {
	dir := state.Dir(t.TempDir())
	require.NoError(t, dir.Ensure())
	dead := "http://127.0.0.1:1"
	require.NoError(t, dir.SaveState(state.State{Project: "gone", Plan: plan.Plan{Project: "gone", Mode: plan.ModeCPU},
		Probes: plan.Probes{Ray: dead, MinIO: dead, Grafana: dead, Prometheus: dead, Jupyter: dead}}))
	for _, args := range [][]string{
		{"status"},
		{"lab", "submit", "--quick"},
		{"verify", "--only", "ray"},
	} {
		t.Run(args[0], func(t *testing.T) {
			var out, errOut bytes.Buffer
			a := newApp(&out, &errOut)
			a.connect = func(context.Context) (docker.Engine, error) { return fake.New(), nil }
			root := a.root()
			root.SetArgs(append(args, "--state-dir", dir.Path(), "--project", "gone"))
			err := root.ExecuteContext(context.Background())
			require.Error(t, err)
			assert.NotEqual(t, 0, clierr.Code(err))
			assert.Contains(t, err.Error(), dir.File(state.CredentialsFile), "names the missing file")
			// The next steps act on this lab: its --project and --state-dir ride along.
			line := "mltrain --project gone --state-dir " + dir.Path()
			assert.Contains(t, clierr.Hint(err), "run '"+line+" up'")
			assert.Contains(t, clierr.Hint(err), "'"+line+" down --volumes'")
			_, statErr := os.Stat(dir.File(state.CredentialsFile))
			assert.True(t, os.IsNotExist(statErr), "no new credentials.json appears")
		})
	}
}

func secrets(c plan.Credentials) []string {
	return []string{c.MinIOAccessKey, c.MinIOSecretKey, c.MinIOLabAccessKey, c.MinIOLabSecretKey,
		c.GrafanaAdminPassword, c.JupyterToken, c.RayAuthToken}
}

// up prints the credentials it created, and only then; its --json never
// holds them; 'mltrain credentials' shows them again.
func TestUpPrintsCredentialsOnlyWhenItCreatedThem(t *testing.T) {
	c := plan.GenerateCredentials()
	res := lifecycle.Result{Plan: plan.Plan{Project: "ncaudit", Mode: plan.ModeCPU, DataVolume: "food11"}, Credentials: c, CredentialsCreated: true,
		StateDir: state.Dir("/srv/labs/ncaudit"),
		URLs:     plan.URLs{"ray_dashboard": "http://h:8265", "jupyter": "http://h:8888/lab", "grafana": "http://h:3000", "minio_console": "http://h:9001"}}

	var out bytes.Buffer
	a := newApp(&out, &bytes.Buffer{})
	a.project = "ncaudit"
	a.printUp(res)
	for _, s := range secrets(c) {
		assert.Contains(t, out.String(), s, "the up that created them prints them")
	}
	assert.Contains(t, out.String(), "http://h:8888/lab?token="+c.JupyterToken)
	assert.Contains(t, out.String(), "'mltrain --project ncaudit credentials' shows them again")
	assert.Contains(t, out.String(), "Next: 'mltrain --project ncaudit data food11' (the dataset volume food11 is empty), then 'mltrain --project ncaudit lab guide'.")

	out.Reset()
	res.CredentialsCreated = false
	a.printUp(res)
	for _, s := range secrets(c) {
		assert.NotContains(t, out.String(), s, "a later up prints no secret")
	}
	assert.Contains(t, out.String(), "Credentials: 'mltrain --project ncaudit credentials' (kept in /srv/labs/ncaudit/credentials.json, mode 0600)")
	assert.Contains(t, out.String(), "http://h:8888/lab\n", "the URLs without the token")

	// The up that first completes the lab shows them, whoever made them
	// (the up that did may have failed); a loaded dataset is not a next step.
	out.Reset()
	res.FirstReady, res.HasData = true, true
	a.printUp(res)
	for _, s := range secrets(c) {
		assert.Contains(t, out.String(), s, "the first up to complete the lab prints them")
	}
	assert.Contains(t, out.String(), "Next: 'mltrain --project ncaudit lab guide'.\n")
	assert.NotContains(t, out.String(), "data food11")
	res.FirstReady = false

	res.CredentialsCreated = true
	b, err := json.Marshal(res)
	require.NoError(t, err)
	for _, s := range secrets(c) {
		assert.NotContains(t, string(b), s, "up --json holds no secret")
	}
	assert.Contains(t, string(b), `"credentials_created":true`)
}

func TestCredentialsShowsThemAgainAndNeverCreates(t *testing.T) {
	dir := state.Dir(t.TempDir())
	_, stderr, code := runOffline(t, "credentials", "--state-dir", dir.Path())
	assert.Equal(t, clierr.ExitFailure, code)
	assert.Contains(t, stderr, "Error: the lab's credentials file "+dir.File(state.CredentialsFile)+" is missing\n")
	assert.Contains(t, stderr, "Next: run 'mltrain --state-dir "+dir.Path()+" up'")
	entries, err := os.ReadDir(dir.Path())
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing created")

	c, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	require.NoError(t, dir.SaveState(state.State{Project: "mltrain", URLs: plan.URLs{"jupyter": "http://h:8888/lab"}}))
	stdout, stderr, code := runOffline(t, "credentials", "--state-dir", dir.Path())
	require.Equal(t, 0, code, stderr)
	for _, s := range secrets(c) {
		assert.Contains(t, stdout, s)
	}
	assert.Contains(t, stdout, "http://h:8888/lab?token="+c.JupyterToken)

	stdout, stderr, code = runOffline(t, "credentials", "--json", "--state-dir", dir.Path())
	require.Equal(t, 0, code, stderr)
	var got struct {
		File        string           `json:"file"`
		Credentials plan.Credentials `json:"credentials"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, c, got.Credentials)
	assert.Equal(t, dir.File(state.CredentialsFile), got.File)
}
