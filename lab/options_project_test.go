package lab

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
)

// dnsLabel is one DNS label (RFC 1035/1123): what the engine's DNS can serve
// a container name as.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// The longest --project renders a lab whose every derived name is legal:
// container names are DNS labels (even for worker 999), volume and network
// names fit a path component, and compose-go loads it under that name.
func TestLongestProjectKeepsDerivedNamesLegal(t *testing.T) {
	name := "lab-" + strings.Repeat("x", MaxProjectLen-4)
	require.NoError(t, CheckProject(name))
	assert.Len(t, containerName(name, "ray-worker-999"), 63)
	assert.Regexp(t, dnsLabel, containerName(name, "ray-worker-999"))

	p, err := NewPlan(facts(nv(8)), Options{Project: name}, creds)
	require.NoError(t, err)
	dir := StateDir(t.TempDir())
	r, err := Render(context.Background(), dir, p)
	require.NoError(t, err)
	assert.Equal(t, name, r.Project.Name)
	for _, s := range r.Project.Services {
		assert.Regexp(t, dnsLabel, s.ContainerName, s.Name)
	}
	for key, v := range r.Project.Volumes {
		engineName := v.Name
		if engineName == "" {
			engineName = name + "_" + key
		}
		assert.LessOrEqual(t, len(engineName), 255, key)
	}
	assert.LessOrEqual(t, len(DefaultStateDir(name).Path()), 4096)
	_, err = compose.Load(context.Background(), dir.Path())
	require.NoError(t, err)
}

func TestCheckProject(t *testing.T) {
	for _, ok := range []string{"mltrain", "ncaudit", "lab_2", "0lab", strings.Repeat("a", MaxProjectLen)} {
		assert.NoError(t, CheckProject(ok), ok)
	}
	for bad, want := range map[string]string{
		strings.Repeat("a", 300):             "--project is 300 characters long; at most 48",
		strings.Repeat("a", MaxProjectLen+1): "--project is 49 characters long",
		"My Lab":                             `--project "My Lab" is not a valid Compose project name`,
		"-lab":                               "not a valid Compose project name",
		"lab.2":                              "not a valid Compose project name",
		"":                                   "not a valid Compose project name",
	} {
		err := CheckProject(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), want)
		assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
		assert.NotEmpty(t, clierr.Hint(err))
	}
}
