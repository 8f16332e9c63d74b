package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/state"
)

// mltrain up of a stand-in lab in a terminal: the live view redraws, the
// lab is proven ready, the new credentials are shown once, and the terminal
// is left as it was (runTerm checks). Then the commands that only read the
// lab work on its state dir made read-only, and write nothing; up and
// render refuse it with a hint that fits. A later up and up --json print no
// secret; 'mltrain credentials' shows them again.
func TestUpInATerminal(t *testing.T) {
	s := newStandin(t)
	run := runTerm(t, TermOptions{Args: s.upArgs(), Env: s.env, Limit: 4 * time.Minute})
	require.Equal(t, 0, run.Code)
	assert.GreaterOrEqual(t, run.Redraws, 1, "the live view redrew while up ran")
	screen := strings.Join(untimed(run.Screen), "\n")
	assert.Contains(t, screen, "✓ ready ray: Ray 2.54.0: 1 head + 2 workers ALIVE, 2 GPUs")
	assert.Contains(t, screen, `Lab "`+s.project+`" is ready (cpu mode, 2 workers).`)
	assert.Contains(t, screen, `✓ minio lab user: created, bucket "ray" only`, "in words, no MinIO error text")
	assert.Len(t, s.containers(t), 7)
	c, err := state.Dir(s.stateDir).Credentials()
	require.NoError(t, err)
	for _, secret := range secrets(c) {
		assert.Contains(t, screen, secret, "the up that created the credentials shows them")
	}
	flags := "--project " + s.project + " --state-dir " + s.stateDir
	assert.Contains(t, screen, "'mltrain "+flags+" credentials' shows them again")
	assert.Contains(t, screen, "Next: 'mltrain "+flags+" data food11 --volume "+s.opts.DataVolume+"' (the dataset volume "+s.opts.DataVolume+" is empty), then 'mltrain "+flags+" lab guide'.")

	// Read-only state dir: the reading commands work and write nothing.
	before := snapshot(t, s.stateDir)
	ro := func(args ...string) (string, string, int) {
		return runBin(t, binRun{args: append(args, s.lab()...), env: s.env, readOnly: s.stateDir})
	}
	out, errOut, code := ro("status")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, s.project+"-ray-worker-1")
	assert.Contains(t, out, "Ray: 3 of 3 nodes ALIVE", "status read the token from the read-only state dir")
	require.Eventually(t, func() bool { // healthchecks run every 5 s
		_, _, code = ro("verify", "--only", "containers,ray,minio")
		return code == 0
	}, time.Minute, 2*time.Second, "verify of a ready lab passes from a read-only state dir")
	out, errOut, code = ro("verify", "--json", "--only", "minio")
	assert.Equal(t, 0, code, errOut)
	var rep struct {
		Checks []struct{ ID, Status, Evidence string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Checks, 4)
	assert.Contains(t, rep.Checks[2].Evidence, "is refused outside it and its policy (AccessDenied)", "minio.lab-user against the real MinIO")
	assert.Contains(t, rep.Checks[3].Evidence, "anonymous list and read refused", "minio.private against the real MinIO")
	out, errOut, code = ro("logs", "ray-head", "--tail", "5")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "standin")
	out, errOut, code = ro("credentials", "--json")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, c.MinIOLabSecretKey)
	assert.Equal(t, before, snapshot(t, s.stateDir), "the reading commands wrote nothing in the state dir")

	// ...and the writing ones refuse it, saying what fits a read-only filesystem.
	for _, args := range [][]string{s.upArgs(), {"render", "--project", s.project, "--state-dir", s.stateDir}} {
		_, errOut, code := runBin(t, binRun{args: args, env: s.env, readOnly: s.stateDir})
		assert.Equal(t, 1, code, errOut)
		e, next := nextLines(errOut)
		assert.Regexp(t, `^state dir `+regexp.QuoteMeta(s.stateDir)+` is not writable: .*read-only file system$`, e)
		assert.Equal(t, s.stateDir+" is on a read-only filesystem: copy its files to a writable directory (credentials.json holds the lab's secrets) and use that with --state-dir DIR; status, logs and verify still read it where it is", next)
	}
	assert.Equal(t, before, snapshot(t, s.stateDir))

	// A later up (piped) and up --json print no secret.
	out, errOut, code = runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Credentials: 'mltrain "+flags+" credentials' (kept in "+s.stateDir+"/credentials.json, mode 0600).")
	assert.Contains(t, errOut, `✓ minio lab user: unchanged, bucket "ray" only`)
	for _, secret := range secrets(c) {
		assert.NotContains(t, out+errOut, secret, "a later up prints no secret")
	}
	out, errOut, code = runBin(t, binRun{args: s.upArgs("--json"), env: s.env})
	require.Equal(t, 0, code, errOut)
	for _, secret := range secrets(c) {
		assert.NotContains(t, out+errOut, secret, "up --json prints no secret, in its result or its events")
	}
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, false, res["credentials_created"])
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var e progress.Event
		require.NoError(t, json.Unmarshal([]byte(l), &e), "stderr holds JSON events only: %q", l)
	}
}

// Ctrl-C while up waits for the lab to be ready (a worker that never joins
// Ray, by a compose.override.yaml): exit 130, the message says what was
// interrupted and what is left (this first up rolled back), the terminal is
// sane; a re-run without the override converges.
func TestUpInterruptedInATerminal(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	override := filepath.Join(s.stateDir, "compose.override.yaml")
	require.NoError(t, os.WriteFile(override, []byte("services:\n  ray-worker-1:\n    command: [\"idle\"]\n"), 0o644))

	waiting := regexp.MustCompile(`ready ray +\d+s +waiting: the Ray [\d.]+ cluster sees 1 head\(s\), 1 of 2 workers`)
	run := runTerm(t, TermOptions{Args: s.upArgs(), Env: s.env, Limit: 4 * time.Minute,
		Input: []Input{{When: waiting.MatchString, Keys: "\x03"}}})
	assert.Equal(t, 130, run.Code)
	assert.Contains(t, run.Output, "^C")
	screen := untimed(run.Screen)
	rerun := rerunLine(s.upArgs())
	require.GreaterOrEqual(t, len(screen), 2, "%q", screen)
	assert.Regexp(t, `^Error: interrupted: `+regexp.QuoteMeta(rerun)+` stopped during: .*ray`, screen[len(screen)-2])
	assert.Equal(t, "Next: rolled back: this first up's containers were removed; its volumes and the state dir's credentials and compose.yaml are kept; "+
		"run '"+rerun+"' again to finish: a re-run converges from whatever is in place", screen[len(screen)-1])
	assert.NotContains(t, strings.Join(screen, "\n"), "context canceled")
	assert.Empty(t, s.containers(t), "rolled back")

	require.NoError(t, os.Remove(override))
	_, errOut, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "a re-run converges:\n%s", errOut)
	assert.Len(t, s.containers(t), 7)
}
