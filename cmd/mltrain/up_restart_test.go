package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// The head's process killed on a stand-in lab: the workers' raylets give up
// (10 s here), exit 1, and Docker restarts them under their restart policy,
// again and again while the head is gone. An up run the moment Docker
// restarted one starts the head and succeeds, waiting for Docker's restarts
// (saying so) where it meets one: no fault while Docker heals the lab.
func TestUpRightAfterTheHeadWasKilledWaitsForDockersRestart(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(s.stateDir).File(compose.OverrideFile), []byte(headRestartOverride), 0o600))
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)

	head := s.project + "-" + service.HeadService
	out, err := exec.Command("docker", "kill", head).CombinedOutput()
	require.NoError(t, err, "docker kill %s: %s", head, out)
	ctx := context.Background()
	worker := s.project + "-ray-worker-0"
	require.Eventually(t, func() bool {
		d, err := s.eng.ContainerInspect(ctx, worker)
		return err == nil && d.RestartCount > 0
	}, 2*time.Minute, 20*time.Millisecond, "Docker never restarted %s", worker)

	_, stderr, code = runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up while Docker restarts the workers:\n%s", stderr)
	assert.NotContains(t, stderr, "fix the cause")
	// Whether up sees a worker "restarting" (Docker's backoff is 100 ms
	// when the worker ran 10 s) is chance here; lab/ready's
	// TestWaitWaitsForDockersRestartOnTheEngine holds one there for seconds.
	if strings.Contains(stderr, "Docker is restarting it") {
		assert.Regexp(t, regexp.MustCompile(`exited with code \d+ and Docker is restarting it \(its restart policy\): waiting for it, \d+s so far of at most 1m30s`), stderr)
	}
	assert.Equal(t, 2, workersAlive(s.status(t)))
}

// Ctrl-C twice during a first up (the second once the first stopped the
// readiness wait: two signals at once are one): the second gives the rollback 10 s
// more and says so, and whichever way it ends, mltrain says what it rolled
// back or what may be left, with the command that converges; exit 130.
func TestFirstUpInterruptedTwiceSaysWhatItLeft(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	override := state.Dir(s.stateDir).File(compose.OverrideFile)
	require.NoError(t, os.WriteFile(override, []byte("services:\n  ray-worker-1:\n    command: [\"idle\"]\n"), 0o644))

	waiting := regexp.MustCompile(`ready ray +\d+s +waiting: the Ray [\d.]+ cluster sees 1 head\(s\), 1 of 2 workers`)
	run := runTerm(t, TermOptions{Args: s.upArgs(), Env: s.env, Limit: 4 * time.Minute,
		Input: []Input{{When: waiting.MatchString, Keys: "\x03"}, {When: func(o string) bool { return strings.Contains(o, "✗ ready:") }, Keys: "\x03"}}})
	assert.Equal(t, 130, run.Code, run.Output)
	assert.Contains(t, run.Output, "received interrupt again: cleaning up for at most 10s more (once more ends mltrain at once)")
	screen := untimed(run.Screen)
	require.GreaterOrEqual(t, len(screen), 2, "%q", screen)
	rerun := rerunLine(s.upArgs())
	last := screen[len(screen)-1]
	if strings.HasPrefix(last, "Next: rolled back") {
		assert.Equal(t, "Next: rolled back: this first up's containers were removed; its volumes and the state dir's credentials and compose.yaml are kept; "+
			"run '"+rerun+"' again to finish: a re-run converges from whatever is in place", last)
		assert.Empty(t, s.containers(t), "rolled back")
	} else {
		assert.Equal(t, "Next: see what is left with '"+rerunLine(append(s.lab(), "status"))+"', then run '"+rerun+"' again (it starts from whatever is in place)", last)
	}

	require.NoError(t, os.Remove(override))
	_, errOut, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "a re-run converges:\n%s", errOut)
	assert.Len(t, s.containers(t), 7)
}
