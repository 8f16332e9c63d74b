package main

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
)

// stamp sets the link-time variables as -ldflags would, for one test.
func stamp(t *testing.T, v, c, d string) {
	old := [3]string{version, commit, date}
	version, commit, date = v, c, d
	t.Cleanup(func() { version, commit, date = old[0], old[1], old[2] })
}

func TestVersionJSONNamesTheBuild(t *testing.T) {
	stamp(t, "0.3.0", "0123abc", "2026-11-23T20:00:00Z")
	out, _, code := run(t, "version", "--json")
	require.Equal(t, 0, code)
	var b buildInfo
	require.NoError(t, json.Unmarshal([]byte(out), &b), out)
	assert.Equal(t, buildInfo{Version: "0.3.0", Commit: "0123abc", Date: "2026-11-23T20:00:00Z", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, NVML: nvmlCompiledIn, RayVersion: plan.DefaultRayVersion}, b)
}

func TestVersionText(t *testing.T) {
	stamp(t, "0.3.0", "0123abc", "2026-11-23T20:00:00Z")
	out, _, code := run(t, "version")
	require.Equal(t, 0, code)
	for _, want := range []string{"mltrain 0.3.0\n", "commit:  0123abc", "built:   2026-11-23T20:00:00Z",
		"go:      " + runtime.Version(), "ray:     " + plan.DefaultRayVersion} {
		assert.Contains(t, out, want)
	}
	if nvmlCompiledIn {
		assert.Contains(t, out, "nvml:    compiled in")
	} else {
		assert.Contains(t, out, "nvml:    NOT compiled in")
	}
}

// --version prints exactly what the version command does, even when the
// version string looks like template syntax.
func TestVersionFlagMatchesCommand(t *testing.T) {
	stamp(t, "{{.Name}}", "0123abc", "2026-11-23T20:00:00Z")
	cmdOut, _, code := run(t, "version")
	require.Equal(t, 0, code)
	flagOut, _, code := run(t, "--version")
	require.Equal(t, 0, code)
	assert.Equal(t, cmdOut, flagOut)
	assert.Contains(t, flagOut, "mltrain {{.Name}}\n")
}

// Unstamped builds say so rather than printing empty fields.
func TestVersionUnstamped(t *testing.T) {
	stamp(t, "dev", "", "")
	b := currentBuild()
	assert.NotEmpty(t, b.Commit)
	assert.NotEmpty(t, b.Date)
}
