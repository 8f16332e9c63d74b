package clierr

import (
	"errors"
	"fmt"
	"strings"
)

// Next is a next step that names mltrain commands, from a layer that cannot
// write their command lines: only the command layer knows the lab's
// --project and --state-dir. Text holds one %s per command; Commands are
// each command's words after "mltrain", in order.
type Next struct {
	Text     string
	Commands [][]string
}

// Step is a Next naming one command.
func Step(text string, words ...string) Next { return Next{Text: text, Commands: [][]string{words}} }

// Write is the step with each command line written by line.
func (n Next) Write(line func(words ...string) string) string {
	args := make([]any, len(n.Commands))
	for i, w := range n.Commands {
		args[i] = line(w...)
	}
	return fmt.Sprintf(n.Text, args...)
}

// String is the step as typed on the default lab.
func (n Next) String() string { return n.Write(Plain) }

// Plain is the command line of words on the default lab.
func Plain(words ...string) string { return strings.Join(append([]string{"mltrain"}, words...), " ") }

type nexted struct {
	err  error
	next Next
}

func (n *nexted) Error() string { return n.err.Error() }
func (n *nexted) Unwrap() error { return n.err }

// WithNext attaches a next step naming mltrain commands to err; the command
// layer writes it as err's hint. A nil err stays nil.
func WithNext(err error, n Next) error {
	if err == nil {
		return nil
	}
	return &nexted{err: err, next: n}
}

// NextOf is the outermost next step WithNext attached in err's chain.
func NextOf(err error) (Next, bool) {
	var n *nexted
	if errors.As(err, &n) {
		return n.next, true
	}
	return Next{}, false
}

// Then is n followed by text naming one more command.
func (n Next) Then(text string, words ...string) Next {
	return Next{Text: n.Text + text, Commands: append(append([][]string(nil), n.Commands...), words)}
}

// HintWith is err's hint: its plain hint, else its next step with each
// command line written by line.
func HintWith(err error, line func(words ...string) string) string {
	if h := Hint(err); h != "" {
		return h
	}
	if n, ok := NextOf(err); ok {
		return n.Write(line)
	}
	return ""
}
