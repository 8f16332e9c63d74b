package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
)

// runOffline runs the CLI in-process with an engine that must not be
// reached, and returns stdout, what main prints on stderr, and the exit code.
func runOffline(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runOfflineIn(t, "", args...)
}

// runOfflineIn is runOffline with stdin (a pipe's, not a terminal's).
func runOfflineIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	a.connect = func(context.Context) (docker.Engine, error) {
		t.Errorf("%q reached the engine", args)
		return nil, errors.New("unreachable")
	}
	root := a.root()
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	code := report(&errOut, root.ExecuteContext(context.Background()))
	return out.String(), errOut.String(), code
}

func TestUsageErrorsExit2WithNext(t *testing.T) {
	cases := []struct {
		args []string
		err  string // the Error line after "Error: "
		next string // the Next line after "Next: "
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "mltrain"`, "run 'mltrain --help'"},
		{[]string{"upp"}, `unknown command "upp" for "mltrain" (did you mean "up"?)`, "run 'mltrain --help'"},
		{[]string{"--bogus"}, "mltrain: unknown flag: --bogus", "run 'mltrain --help'"},
		{[]string{"up", "extra-arg"}, `mltrain up takes no arguments (got "extra-arg")`, "run 'mltrain up --help'"},
		{[]string{"up", "a", "b"}, `mltrain up takes no arguments (got "a b")`, "run 'mltrain up --help'"},
		{[]string{"up", "--bogus"}, "mltrain up: unknown flag: --bogus", "run 'mltrain up --help'"},
		{[]string{"up", "--timeout", "soon"}, `mltrain up: invalid argument "soon" for "--timeout" flag: time: invalid duration "soon"`, "run 'mltrain up --help'"},
		{[]string{"status", "-x"}, "mltrain status: unknown shorthand flag: 'x' in -x", "run 'mltrain status --help'"},
		{[]string{"worker"}, "mltrain worker: accepts 2 arg(s), received 0 (usage: mltrain worker stop|start N)", "run 'mltrain worker --help'"},
		{[]string{"worker", "stop"}, "mltrain worker: accepts 2 arg(s), received 1 (usage: mltrain worker stop|start N)", "run 'mltrain worker --help'"},
		{[]string{"lab"}, "mltrain lab: accepts 1 arg(s), received 0 (usage: mltrain lab EXERCISE)", "run 'mltrain lab --help'"},
		{[]string{"lab", "submit", "multi"}, "mltrain lab: accepts 1 arg(s), received 2 (usage: mltrain lab EXERCISE)", "run 'mltrain lab --help'"},
		{[]string{"logs", "a", "b"}, "mltrain logs: accepts at most 1 arg(s), received 2 (usage: mltrain logs [SERVICE])", "run 'mltrain logs --help'"},
		{[]string{"data", "bogus"}, `unknown command "bogus" for "mltrain data"`, "run 'mltrain data --help'"},
		{[]string{"data", "food"}, `unknown command "food" for "mltrain data" (did you mean "food11"?)`, "run 'mltrain data --help'"},
		{[]string{"data", "food11", "extra-arg"}, `mltrain data food11 takes no arguments (got "extra-arg")`, "run 'mltrain data food11 --help'"},
		{[]string{"data", "food11", "--url", "http://x/z.zip", "--zip", "z.zip"},
			"mltrain data food11: if any flags in the group [url zip] are set none of the others can be; [url zip] were all set",
			"run 'mltrain data food11 --help'"},
		{[]string{"images", "bogus"}, `unknown command "bogus" for "mltrain images"`, "run 'mltrain images --help'"},
		{[]string{"version", "x"}, `mltrain version takes no arguments (got "x")`, "run 'mltrain version --help'"},
		{[]string{"completion", "nushell"}, `unknown command "nushell" for "mltrain completion"`, "run 'mltrain completion --help'"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			out, stderr, code := runOffline(t, c.args...)
			assert.Equal(t, clierr.ExitUsage, code)
			assert.Equal(t, "Error: "+c.err+"\nNext: "+c.next+"\n", stderr)
			assert.Empty(t, out, "no usage text dumped on a mistake")
		})
	}
}

// Usage errors a command's own check reports keep its message and next
// step, and exit 2 too.
func TestUsageErrorsOfACommandKeepTheirHint(t *testing.T) {
	_, stderr, code := runOffline(t, "images", "save")
	assert.Equal(t, clierr.ExitUsage, code)
	assert.Contains(t, stderr, "Next: ")
	assert.NotContains(t, stderr, "images --help", "the command's own hint, not the generic one")

	_, stderr, code = runOffline(t, "worker", "stop", "one")
	assert.Equal(t, clierr.ExitUsage, code)
	assert.Contains(t, stderr, "Next: e.g. 'mltrain worker stop 1'")
}

func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"up", "--help"}, {"data"}} {
		out, stderr, code := runOffline(t, args...)
		if len(args) == 1 && args[0] == "data" {
			// 'data' alone names no dataset: a usage error of its own
			assert.Equal(t, clierr.ExitUsage, code)
			assert.Contains(t, stderr, "Next: mltrain data food11")
			continue
		}
		assert.Equal(t, 0, code, "%q: %s", args, stderr)
		assert.Contains(t, out, "Usage:", "%q", args)
	}
}

func TestInterruptedSaysWhatStoppedAndHowToGoOn(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalled{syscall.SIGINT})
	cause := fmt.Errorf("wait for mltrain-ray-head: %w", context.Canceled)

	var stderr bytes.Buffer
	code := report(&stderr, interrupted(ctx, cause, []string{"up", "--image-head", "my head:1"}))
	assert.Equal(t, 130, code)
	assert.Equal(t, "Error: interrupted: mltrain up --image-head \"my head:1\" stopped during: wait for mltrain-ray-head\n"+
		"Next: run 'mltrain up --image-head \"my head:1\"' again to finish: a re-run converges from whatever is in place\n", stderr.String())

	assert.Nil(t, interrupted(ctx, nil, []string{"up"}), "a command that finished despite the signal succeeded")
	plain := errors.New("port 8265 is taken")
	assert.Equal(t, plain, interrupted(context.Background(), plain, []string{"up"}), "no signal: the error as it is")

	term, cancelTerm := context.WithCancelCause(context.Background())
	cancelTerm(signalled{syscall.SIGTERM})
	assert.Equal(t, 143, clierr.Code(interrupted(term, cause, []string{"up"})))
}

func TestRerunLineQuotes(t *testing.T) {
	assert.Equal(t, "mltrain data food11 --zip /tmp/f.zip --volume=v", rerunLine([]string{"data", "food11", "--zip", "/tmp/f.zip", "--volume=v"}))
	assert.Equal(t, `mltrain data food11 --zip "/tmp/my \"zip\" \$HOME.zip" ""`, rerunLine([]string{"data", "food11", "--zip", `/tmp/my "zip" $HOME.zip`, ""}))
}

// A signal that ends mltrain before its cleanup finished says so: what may
// be left, the status command of the same lab, the command to run again.
func TestForcedExitSaysWhatMayBeLeft(t *testing.T) {
	msg := forcedExit(syscall.SIGINT, []string{"up", "--project", "lab1", "--state-dir=/tmp/s", "--pull", "never"})
	assert.Equal(t, "Error: received interrupt again: mltrain up --project lab1 --state-dir=/tmp/s --pull never ended before its cleanup finished; what it was undoing may be left in place\n"+
		"Next: see what is left with 'mltrain --project lab1 --state-dir=/tmp/s status', then run 'mltrain up --project lab1 --state-dir=/tmp/s --pull never' again (it starts from whatever is in place)\n", msg)
}
