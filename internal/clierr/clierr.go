// Package clierr carries what the command layer needs from an error besides
// its message: the next command to run, and the process exit code.
//
// Packages below cmd/ wrap errors with these helpers instead of printing or
// exiting; cmd/mltrain renders the hint after the error and picks the exit code.
package clierr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Exit codes shared by every command.
const (
	ExitFailure = 1 // the command ran and something is wrong (a check failed, a step errored)
	ExitUsage   = 2 // the command line is wrong: unknown command or flag, wrong arguments
	// ExitInterrupted is SIGINT's status as shells report it (128 + 2);
	// Interrupted uses 128 + the signal's number for any signal.
	ExitInterrupted = 130
)

type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// WithHint attaches the next thing the user should do (usually a command) to err.
// A nil err stays nil.
func WithHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hinted{err: err, hint: hint}
}

// Hintf wraps a new formatted error with a hint. It supports %w.
func Hintf(hint, format string, args ...any) error {
	return &hinted{err: fmt.Errorf(format, args...), hint: hint}
}

// Hint returns the outermost hint found in err's chain, or "".
func Hint(err error) string {
	var h *hinted
	if errors.As(err, &h) {
		return h.hint
	}
	return ""
}

type coded struct {
	err  error
	code int
}

func (c *coded) Error() string { return c.err.Error() }
func (c *coded) Unwrap() error { return c.err }

// WithCode makes the process exit with code when err reaches main.
func WithCode(err error, code int) error {
	if err == nil {
		return nil
	}
	return &coded{err: err, code: code}
}

// Code returns the exit code for err: 0 for nil, the attached code, else ExitFailure.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var c *coded
	if errors.As(err, &c) {
		return c.code
	}
	return ExitFailure
}

// Silent marks an error whose message the command has already shown
// (for example a failed verification table); main only sets the exit code.
type Silent struct{ Code int }

func (s Silent) Error() string { return fmt.Sprintf("exit status %d", s.Code) }

// IsSilent reports whether err's message should not be printed again.
func IsSilent(err error) bool {
	var s Silent
	return errors.As(err, &s)
}

// Usage marks err as a mistake in the command line of the command at path
// ("mltrain up"): exit 2, and, unless err already names a next step, a
// hint naming that command's help.
func Usage(err error, path string) error {
	if err == nil {
		return nil
	}
	if Hint(err) == "" {
		err = WithHint(err, fmt.Sprintf("run '%s --help'", path))
	}
	return WithCode(err, ExitUsage)
}

// Interrupted is err of a command that sig stopped: the message says what
// was interrupted (err's text without its bare "context canceled"), the
// hint keeps err's own (the command's detail on what is left behind) and
// adds that running rerun again continues, and the exit code is 128 + sig.
func Interrupted(err error, sig syscall.Signal, rerun string) error {
	c := context.Canceled.Error()
	what := strings.NewReplacer(" ("+c+")", "", ": "+c, "", c, "").Replace(err.Error())
	what = strings.TrimRight(strings.TrimSpace(what), ":")
	msg := "interrupted: " + rerun + " stopped"
	if what != "" {
		msg += " during: " + what
	}
	next := fmt.Sprintf("run '%s' again to finish: a re-run converges from whatever is in place", rerun)
	if errors.Is(err, ErrStartsOver) {
		next = fmt.Sprintf("run '%s' again: it starts over", rerun)
	}
	if h := Hint(err); h != "" {
		next = h + "; " + next
	}
	return WithCode(&hinted{err: &interrupted{msg: msg, err: err}, hint: next}, 128+int(sig))
}

type interrupted struct {
	msg string
	err error
}

func (i *interrupted) Error() string { return i.msg }
func (i *interrupted) Unwrap() error { return i.err }

// Mark makes err also be kind (errors.Is(err, kind) holds) with err's
// message unchanged: a package below lab/ says what went wrong by a
// sentinel, and the layer that knows the user's command turns the kind
// into what to type next.
func Mark(err, kind error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, kind: kind}
}

type marked struct{ err, kind error }

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.kind} }

// ErrStartsOver marks (Mark) the error of a command that a re-run does not
// finish but starts again (an exercise submits new jobs): an interrupted
// one's next step says so, not that a re-run converges.
var ErrStartsOver = errors.New("a re-run starts over")
