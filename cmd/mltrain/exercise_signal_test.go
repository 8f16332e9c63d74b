package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

// signalLabOverride: a silent node is DEAD after 5 s, an epoch takes 3 s
// (the jobs run long enough to be interrupted).
const signalLabOverride = "services:\n  ray-head:\n    environment:\n" +
	"      STANDIN_RAY_DEAD_AFTER: 5s\n      STANDIN_TRAIN_EPOCH: 3s\n"

// The signal path of every exercise, on the real engine under a pty: a
// SIGINT (Ctrl-C), SIGTERM or SIGHUP while an exercise waits ends the Ray
// jobs it started (it says which, and Ray has them ended) and starts again
// the worker fault stopped; a second signal does the same within its 10 s
// grace. The exit code is 128 + the signal.
func TestEverySignalEndsAnExercisesJobsAndRestartsItsWorker(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(s.stateDir).File(compose.OverrideFile), []byte(signalLabOverride), 0o600))
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)
	lc, err := state.Dir(s.stateDir).Connect()
	require.NoError(t, err)
	ctx := context.Background()

	running := regexp.MustCompile(`mltrain-\S+: RUNNING`).MatchString
	stopped := func(o string) bool { return strings.Contains(o, "waiting for Ray Train to resume") }
	rows := []struct {
		exercise string
		when     func(string) bool
		sigs     []syscall.Signal // the second, if any, during the cleanup (two at once are one)
	}{
		{"submit", running, []syscall.Signal{syscall.SIGINT}},
		{"infeasible", func(o string) bool { return strings.Contains(o, "PENDING for") }, []syscall.Signal{syscall.SIGTERM}},
		{"multi", running, []syscall.Signal{syscall.SIGHUP}},
		{"fractional", running, []syscall.Signal{syscall.SIGTERM}},
		{"tune", running, []syscall.Signal{syscall.SIGHUP}},
		{"fault", stopped, []syscall.Signal{syscall.SIGINT}},
		{"fault", stopped, []syscall.Signal{syscall.SIGTERM}},
		{"fault", stopped, []syscall.Signal{syscall.SIGHUP, syscall.SIGHUP}},
	}
	for _, row := range rows {
		t.Run(fmt.Sprint(row.exercise, row.sigs), func(t *testing.T) {
			args := append([]string{"lab", row.exercise, "--quick", "--fake-data", "--observe", "5m", "--poll", "500ms"}, s.lab()...)
			var firstAt time.Time
			in := []Input{{When: func(o string) bool {
				if row.when(o) {
					firstAt = time.Now()
					return true
				}
				return false
			}, Signal: row.sigs[0]}}
			if len(row.sigs) > 1 {
				// 100 ms on, the first was handled: the cleanup runs (the
				// live view redraws meanwhile, so this is checked).
				in = append(in, Input{When: func(string) bool { return !firstAt.IsZero() && time.Since(firstAt) > 100*time.Millisecond },
					Signal: row.sigs[1]})
			}
			run := runTerm(t, TermOptions{Args: args, Env: s.env, Limit: 4 * time.Minute, Input: in})
			sig := row.sigs[len(row.sigs)-1]
			assert.Equal(t, 128+int(sig), run.Code, run.Output)
			if len(row.sigs) > 1 {
				assert.Contains(t, run.Output, "received "+sig.String()+" again: cleaning up for at most 10s more")
			}
			screen := strings.Join(untimed(run.Screen), "\n")
			assert.NotContains(t, screen, "is still", "no job left open in Ray")
			ended := regexp.MustCompile(`job (mltrain-`+row.exercise+`-\S+) was (?:RUNNING|PENDING) in Ray: ended it by (?:killing its supervisor actor \S+|stopping it)`).FindAllStringSubmatch(screen, -1)
			require.NotEmpty(t, ended, "the interrupted exercise says which jobs it ended:\n%s", screen)
			for _, m := range ended {
				require.Eventually(t, func() bool {
					j, err := lc.Ray.Job(ctx, m[1])
					return err == nil && j.Status.Terminal()
				}, 30*time.Second, 500*time.Millisecond, "job %s ended in Ray", m[1])
			}
			if row.exercise == "fault" {
				ws, err := status.ListWorkers(ctx, s.eng, s.project)
				require.NoError(t, err)
				for _, w := range ws {
					assert.Equal(t, "running", w.State, "%s is running again", w.Name)
				}
			}
		})
	}
}
