// Package clierr carries what the command layer needs from an error besides
// its message: the next command to run, and the process exit code.
//
// Packages below cmd/ wrap errors with these helpers instead of printing or
// exiting; cmd/mltrain renders the hint after the error and picks the exit code.
package clierr

import (
	"errors"
	"fmt"
)

// Exit codes shared by every command.
const (
	ExitFailure  = 1 // the command ran and something is wrong (a check failed, a step errored)
	ExitNotBuilt = 2 // the verb exists but is not implemented yet, or the usage is wrong
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

// NotBuilt is the error of a registered verb that a later issue fills in.
func NotBuilt(verb, issue string) error {
	return WithCode(WithHint(fmt.Errorf("mltrain %s is not built yet (tracked in %s)", verb, issue),
		"run 'mltrain --help' to see the commands that work today"), ExitNotBuilt)
}
