package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

const twoNvidia = `{"gpus":[
 {"vendor":"nvidia","index":0,"uuid":"GPU-11111111-2222-3333-4444-555555555555","name":"NVIDIA A100-PCIE-40GB","memory_mib":40960,"pci_bus_id":"0000:17:00.0","source":"nvml"},
 {"vendor":"nvidia","index":1,"uuid":"GPU-66666666-7777-8888-9999-000000000000","name":"NVIDIA A100-PCIE-40GB","memory_mib":40960,"pci_bus_id":"0000:65:00.0","source":"nvml"}
],"problems":[]}`

func gpusFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpus.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestRenderForAnotherHost(t *testing.T) {
	out := filepath.Join(t.TempDir(), "review")
	stdout, _, err := runCLI(t, "render", "--gpus-from", gpusFile(t, twoNvidia), "--cpus", "64", "--memory", "256g",
		"--host-ip", "129.114.27.10", "--out", out)
	require.NoError(t, err)
	assert.Contains(t, stdout, "ray-worker-1")
	assert.Contains(t, stdout, "GPU-66666666-7777-8888-9999-000000000000")

	proj, err := compose.Load(context.Background(), out)
	require.NoError(t, err)
	assert.Len(t, proj.Services, 7)
	head, err := proj.GetService(service.HeadService)
	require.NoError(t, err)
	assert.Equal(t, "http://129.114.27.10:3000", *head.Environment["RAY_GRAFANA_IFRAME_HOST"])

	st, err := os.Stat(filepath.Join(out, state.CredentialsFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// A second render reuses the credentials: the compose file is identical.
	first, err := os.ReadFile(filepath.Join(out, compose.ComposeFile))
	require.NoError(t, err)
	_, _, err = runCLI(t, "render", "--gpus-from", gpusFile(t, twoNvidia), "--cpus", "64", "--memory", "256g",
		"--host-ip", "129.114.27.10", "--out", out)
	require.NoError(t, err)
	second, err := os.ReadFile(filepath.Join(out, compose.ComposeFile))
	require.NoError(t, err)
	assert.Equal(t, string(first), string(second))
}

func TestRenderJSONHasNoSecrets(t *testing.T) {
	out := t.TempDir()
	stdout, _, err := runCLI(t, "render", "--json", "--gpus-from", gpusFile(t, twoNvidia), "--cpus", "8", "--memory", "32g",
		"--out", out, "--image-minio", "local/minio-standin:1", "--port", "dashboard=18265")
	require.NoError(t, err)
	var got struct {
		Dir   string    `json:"dir"`
		Files []string  `json:"files"`
		Plan  plan.Plan `json:"plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Equal(t, out, got.Dir)
	assert.Contains(t, got.Files, compose.ComposeFile)
	assert.Len(t, got.Plan.Workers, 2)
	assert.Equal(t, "local/minio-standin:1", got.Plan.Images[service.RoleMinIO])
	assert.Equal(t, 18265, got.Plan.Ports[service.PortDashboard])
	creds, err := state.Dir(out).Credentials()
	require.NoError(t, err)
	assert.NotContains(t, stdout, creds.RayAuthToken)
	assert.NotContains(t, stdout, creds.MinIOSecretKey)
}

func TestRenderCPURehearsalWarnsLoudly(t *testing.T) {
	_, stderr, err := runCLI(t, "render", "--gpus-from", gpusFile(t, `{"gpus":[],"problems":[{"code":"no-gpu","message":"no GPU","fix":""}]}`),
		"--cpus", "2", "--memory", "4g", "--out", t.TempDir())
	require.NoError(t, err)
	assert.Contains(t, stderr, "CPU REHEARSAL")
}

func TestRenderBadInput(t *testing.T) {
	good := gpusFile(t, twoNvidia)
	base := func(extra ...string) []string {
		return append([]string{"render", "--gpus-from", good, "--cpus", "64", "--memory", "256g", "--out", t.TempDir()}, extra...)
	}
	looseDir := t.TempDir()
	_, _, err := state.Dir(looseDir).CreateCredentials()
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(looseDir, state.CredentialsFile), 0o640))
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))

	for _, tc := range []struct {
		name      string
		args      []string
		err, hint string
		usage     bool // a bad flag value: exit 2
	}{
		{"workers above GPUs", base("--workers", "3"), "--workers 3", "--workers 2", false},
		{"share with two GPUs", base("--share-gpu"), "--share-gpu", "drop --share-gpu", false},
		{"unknown vendor", []string{"render", "--gpus-from", gpusFile(t, `{"gpus":[{"vendor":"intel","index":0,"uuid":"x"}]}`), "--cpus", "4", "--memory", "8g", "--out", t.TempDir()},
			`unknown GPU vendor "intel"`, "nvidia", false},
		{"malformed json", []string{"render", "--gpus-from", gpusFile(t, `{"gpus": [`), "--cpus", "4", "--memory", "8g", "--out", t.TempDir()},
			"is not valid JSON", "mltrain gpus --json", false},
		{"not a gpu list", []string{"render", "--gpus-from", gpusFile(t, `{"hello": 1}`), "--cpus", "4", "--memory", "8g", "--out", t.TempDir()},
			"no \"gpus\" list", "mltrain gpus --json", false},
		{"missing file", []string{"render", "--gpus-from", "/nonexistent/gpus.json", "--cpus", "4", "--memory", "8g", "--out", t.TempDir()},
			"/nonexistent/gpus.json", "mltrain gpus --json", false},
		{"bad bind", base("--bind", "everywhere"), `--bind "everywhere"`, "0.0.0.0", true},
		{"two services on one port", base("--port", "jupyter=3000"), "host port 3000", "--port", true},
		{"bad memory", []string{"render", "--gpus-from", good, "--cpus", "4", "--memory", "lots", "--out", t.TempDir()}, `--memory "lots"`, "16g", true},
		{"gpus-from without sizes", []string{"render", "--gpus-from", good, "--out", t.TempDir()}, "--cpus and --memory are required", "--cpus N", true},
		{"loose credentials", []string{"render", "--gpus-from", good, "--cpus", "4", "--memory", "8g", "--out", looseDir}, "0640", "chmod 600", false},
		{"unwritable state dir", []string{"render", "--gpus-from", good, "--cpus", "4", "--memory", "8g", "--out", filepath.Join(blocker, "state")},
			filepath.Join(blocker, "state"), "--state-dir", false},
		{"latest image", base("--image-grafana", "grafana/grafana:latest"), "--image-grafana", "pin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, clierr.Hint(err), tc.hint)
			want := clierr.ExitFailure
			if tc.usage {
				want = clierr.ExitUsage
			}
			assert.Equal(t, want, clierr.Code(err))
		})
	}
}
