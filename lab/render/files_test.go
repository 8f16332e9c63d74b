package render

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// loadWithOverride renders the two-GPU NVIDIA case, puts override beside
// it as the user's compose.override.yaml and loads the pair.
func loadWithOverride(t *testing.T, override string) (plan.Plan, string, *types.Project, error) {
	t.Helper()
	plan, dir := writeCase(t, caseNamed("nvidia-2gpu"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, compose.OverrideFile), []byte(override), 0o644))
	proj, err := compose.Load(context.Background(), dir)
	return plan, dir, proj, err
}

func TestOverrideIsMerged(t *testing.T) {
	override := "services:\n  jupyter:\n    environment:\n      EXTRA: \"yes\"\n"
	plan, dir, proj, err := loadWithOverride(t, override)
	require.NoError(t, err)
	j, _ := proj.GetService(service.JupyterService)
	assert.Equal(t, "yes", *j.Environment["EXTRA"])
	assert.Equal(t, fixedCreds.JupyterToken, *j.Environment["JUPYTER_TOKEN"], "the rest of the service is kept")

	// A second render keeps the user's override.
	_, err = Write(state.Dir(dir), plan)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, compose.OverrideFile))
	require.NoError(t, err)
	assert.Equal(t, override, string(b))
}

func TestOverrideWithPortClashIsRefused(t *testing.T) {
	_, _, _, err := loadWithOverride(t, "services:\n  jupyter:\n    ports:\n      - \"3000:9999\"\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "services grafana and jupyter both publish host port 3000/tcp")
	assert.Contains(t, clierr.Hint(err), "--port")
}

func TestInvalidOverrideNamesTheFile(t *testing.T) {
	_, _, _, err := loadWithOverride(t, "services:\n  jupyter:\n    shm_size: [oops]\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), compose.OverrideFile)
	assert.Contains(t, clierr.Hint(err), compose.OverrideFile)
}

func TestGeneratedFilesAreReadableAndComposeIsPrivate(t *testing.T) {
	c := caseNamed("nvidia-2gpu")
	_, dir := writeCase(t, c)
	st, err := os.Stat(filepath.Join(dir, compose.ComposeFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "compose.yaml holds the credentials")
	for _, f := range []string{PrometheusConfig, GrafanaDatasource, GrafanaDashboards} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), f)
	}
	st, err = os.Stat(filepath.Join(dir, "workspace"))
	require.NoError(t, err)
	assert.True(t, st.IsDir())
}

// promtool is the Prometheus project's own checker of the config format.
func TestPrometheusConfigPassesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is missing under CI (.ci/run installs the Debian package prometheus): %v", err)
		}
		t.Skip("promtool not installed (apt-get install prometheus); CI runs this check")
	}
	files, err := GeneratedFiles(plan.Plan{Project: "mltrain"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(path, files[PrometheusConfig], 0o644))
	out, err := exec.Command(promtool, "check", "config", path).CombinedOutput()
	require.NoError(t, err, "promtool check config:\n%s", out)
	assert.Contains(t, string(out), "SUCCESS")

	// And it can fail: a broken config is refused.
	bad := strings.Replace(string(files[PrometheusConfig]), "scrape_interval: 10s", "scrape_interval: ten", 1)
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
	_, err = exec.Command(promtool, "check", "config", path).CombinedOutput()
	assert.Error(t, err)
}
