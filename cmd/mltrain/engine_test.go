package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

// dockerContext writes a docker config whose current context is name, an
// engine at host; it returns the config dir.
func dockerContext(t *testing.T, name, host string) string {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	require.NoError(t, os.MkdirAll(meta, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(meta, "meta.json"),
		[]byte(`{"Name":"`+name+`","Endpoints":{"docker":{"Host":"`+host+`"}}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"`+name+`"}`), 0o644))
	return dir
}

// A dead engine's hint names what pointed mltrain at it and how to undo it.
func TestDeadEngineHintNamesWhatPointedAtIt(t *testing.T) {
	dead := "unix://" + filepath.Join(t.TempDir(), "dead.sock")
	for name, c := range map[string]struct {
		env  map[string]string
		hint string
	}{
		"DOCKER_HOST": {map[string]string{"DOCKER_HOST": dead},
			"DOCKER_HOST=" + dead + " points mltrain at that engine: start it or fix DOCKER_HOST, or 'unset DOCKER_HOST' to use this host's Docker; then run 'mltrain doctor'"},
		"current context": {map[string]string{"DOCKER_CONFIG": dockerContext(t, "lab-remote", dead)},
			`the current docker context "lab-remote" points mltrain at ` + dead + ": start that engine, or run 'docker context use default' to use this host's Docker; then run 'mltrain doctor'"},
		"DOCKER_CONTEXT": {map[string]string{"DOCKER_CONFIG": dockerContext(t, "other", dead), "DOCKER_CONTEXT": "other"},
			"DOCKER_CONTEXT=other points mltrain at " + dead + ": start that engine, or 'unset DOCKER_CONTEXT' to use this host's Docker; then run 'mltrain doctor'"},
		"a context that is gone": {map[string]string{"DOCKER_CONFIG": t.TempDir(), "DOCKER_CONTEXT": "gone"},
			"'unset DOCKER_CONTEXT' to use this host's Docker, or pick a context that exists ('docker context ls'); then run 'mltrain doctor'"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", "")
			t.Setenv("DOCKER_CONTEXT", "")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			_, _, err := runCLI(t, "status", "--state-dir", dir)
			require.Error(t, err)
			assert.Equal(t, clierr.ExitFailure, clierr.Code(err))
			// doctor runs on the lab the user named
			assert.Equal(t, strings.Replace(c.hint, "'mltrain doctor'", "'mltrain --state-dir "+dir+" doctor'", 1), clierr.Hint(err))
		})
	}
}
