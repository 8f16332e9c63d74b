package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/verify"
)

// ran is how the remote command ended.
type ran struct {
	exit   int    // its exit status; -1 when it ended without one (a signal)
	stderr string // its last lines, for the detail
}

// runRemote runs cmd in a session, stdin on its standard input, and
// returns its stdout. The error is for the session failing, not the command.
func runRemote(c *ssh.Client, cmd string, stdin []byte) ([]byte, ran, error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, ran{}, fmt.Errorf("open an SSH session: %w", err)
	}
	defer s.Close()
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr = &out, &errOut
	s.Stdin = bytes.NewReader(stdin) // sent, then EOF: the remote reads to its end
	err = s.Run(cmd)
	r := ran{stderr: tail(errOut.String(), 3)}
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.exit = exit.ExitStatus()
		if exit.Signal() != "" {
			r.exit = -1
		}
	case errors.As(err, &missing):
		r.exit = -1
	default:
		return nil, r, fmt.Errorf("run %s: %w", cmd, err)
	}
	return out.Bytes(), r, nil
}

// failure is what a command's --json prints when it cannot run
// (verify.Failure's fields).
type failure struct {
	Error  string `json:"error"`
	Next   string `json:"next"`
	Reason string `json:"reason"`
}

// answer is what 'mltrain verify --json' prints: a report, or a failure.
type answer struct {
	verify.Report
	failure
}

// classify names the state of a host whose verify ran.
func classify(n verify.Node, h Host, o Options, out []byte, r ran) verify.Node {
	var a answer
	jsonErr := json.Unmarshal(out, &a)
	if n, done := unanswered(n, h, o, command{"verify", "verify --json", "verify report", "(an older one cannot be read)"}, out, r, jsonErr, a.failure, len(a.Checks) > 0); done {
		return n
	}
	rep := a.Report
	n.Report = &rep
	n.State = Passed
	if rep.Conditional > 0 {
		n.State, n.Detail = Rehearsed, "passed, "+rep.ConditionsSummary()
		n.Fix = "for the lesson at full size the student runs '" + o.line("lab", "all") + "' (without --quick, --fake-data or --cpus) on a GPU lab"
	}
	if !rep.OK || rep.Failed > 0 {
		n.State, n.Detail = Failed, "failed: "+strings.Join(rep.FailedIDs(), ", ")
		// Where the fixes are shown is the writer's to say: the HTML
		// page lists them under the host, the table points to it.
		n.Fix = "apply each failed check's fix, or log in (ssh " + h.Spec + ") and run '" + o.line("verify") + "'"
	}
	return n
}

// command names a remote mltrain command in the states' words.
type command struct {
	name   string // "verify"
	words  string // as run, after mltrain: "verify --json"
	answer string // what its --json prints: "verify report"
	older  string // what an older mltrain lacks, for the fix
}

// unanswered names the state of a host whose command gave no answer: it
// printed a failure (no lab, or why it could not run), or nothing a
// reader of its --json can read (mltrain missing or too old). done is
// false when out holds an answer (answered), for the caller to judge.
func unanswered(n verify.Node, h Host, o Options, c command, out []byte, r ran, jsonErr error, f failure, answered bool) (verify.Node, bool) {
	switch {
	case jsonErr == nil && f.Error != "" && f.Reason == verify.ReasonNoLab,
		// before verify --json printed its failures, no lab was only said on stderr
		jsonErr != nil && strings.Contains(r.stderr, "no lab state at"):
		n.State, n.Detail = NoLab, firstOf(f.Error, r.stderr)
		n.Fix = fmt.Sprintf("the student runs '%s' on %s (or pass the lab's --project/--state-dir)", o.line("up"), h.Spec)
	case jsonErr == nil && f.Error != "":
		n.State, n.Detail = Failed, c.name+" could not run: "+f.Error
		n.Fix = firstOf(f.Next, "log in (ssh "+h.Spec+") and run '"+o.line(c.name)+"'")
	case jsonErr == nil && answered:
		return n, false
	case r.exit == 126 || r.exit == 127: // the shell's "not executable" and "not found"
		n.State, n.Detail = NoMltrain, fmt.Sprintf("%s is not on %s (%s)", o.Mltrain, h.Spec, firstOf(r.stderr, fmt.Sprintf("exit status %d", r.exit)))
		n.Fix = "install mltrain on the node, or pass --mltrain with its path there"
	default:
		why := firstOf(r.stderr, "no output")
		if jsonErr != nil && len(bytes.TrimSpace(out)) > 0 {
			why = "its output is not a " + c.answer + ": " + jsonErr.Error()
		}
		n.State, n.Detail = NoMltrain, fmt.Sprintf("'%s %s' on %s exited %d: %s", o.Mltrain, c.words, h.Spec, r.exit, why)
		n.Fix = "install this version of mltrain on the node " + c.older + ", or check --mltrain"
	}
	return n, true
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// tail is the last n non-empty lines of s, on one line.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// line is the command line of words on the lab the hosts are asked about,
// as each host's own verify runs.
func (o Options) line(words ...string) string {
	return nextstep.Commands{Lab: state.Lab{Project: o.Project, StateDir: o.StateDir}}.Line(words...)
}
