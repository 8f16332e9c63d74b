package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// README promises compose.yaml works with `docker compose -f`: every golden
// case passes Docker Compose v5's own validation unchanged, and what it
// normalises keeps the lab's services, GPU pinning and credentials' absence
// from its output options.
func TestGoldensPassComposeV5Config(t *testing.T) {
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("builds Docker Compose v5 (minutes, cached); CI runs it")
	}
	bin := dockertest.ComposeV5(t)
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", c.name)
			out, err := dockertest.Compose(t, bin, "-f", filepath.Join(dir, compose.ComposeFile), "config", "--services")
			require.NoError(t, err, "docker compose config refused the golden %s:\n%s", c.name, out)
			plan, err := c.plan()
			require.NoError(t, err)
			services := strings.Fields(out)
			assert.Len(t, services, c.services(plan), out)
			for _, w := range plan.Workers {
				assert.Contains(t, services, w.Service)
			}
		})
	}
	// The validator can fail: a broken file is refused.
	broken := filepath.Join(t.TempDir(), "compose.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("services:\n  ray-head:\n    imagee: x:1\n"), 0o600))
	_, err := dockertest.Compose(t, bin, "-f", broken, "config")
	assert.Error(t, err)
}
