package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/lab"
)

// A lab whose credentials.json is gone: every command that reads the lab
// fails naming the file and what to do, and none of them mints new secrets
// (which the running lab would not know).
func TestMissingCredentialsAreNeverMinted(t *testing.T) {
	dir := lab.StateDir(t.TempDir())
	require.NoError(t, dir.Ensure())
	dead := "http://127.0.0.1:1"
	require.NoError(t, dir.SaveState(lab.State{Project: "gone", Plan: lab.Plan{Project: "gone", Mode: lab.ModeCPU},
		Probes: lab.Probes{Ray: dead, MinIO: dead, Grafana: dead, Prometheus: dead, Jupyter: dead}}))
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
			assert.Contains(t, err.Error(), dir.File(lab.CredentialsFile), "names the missing file")
			assert.Contains(t, clierr.Hint(err), "mltrain up")
			assert.Contains(t, clierr.Hint(err), "mltrain down --volumes")
			_, statErr := os.Stat(dir.File(lab.CredentialsFile))
			assert.True(t, os.IsNotExist(statErr), "no new credentials.json appears")
		})
	}
}
