package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// app holds the global flags and the ways commands reach the outside world,
// so each command stays a few lines: flags -> call a package -> print.
type app struct {
	json     bool
	verbose  bool
	stateDir string
	project  string
	out      io.Writer
	errOut   io.Writer

	// connect opens the engine; tests replace it with a fake.
	connect func(ctx context.Context) (docker.Engine, error)
	// now is the clock the lease is read by; tests replace it.
	now func() time.Time
}

func newRoot(out, errOut io.Writer) *cobra.Command { return newApp(out, errOut).root() }

// newApp is the CLI's state before flags are parsed; tests replace connect.
func newApp(out, errOut io.Writer) *app {
	a := &app{out: out, errOut: errOut, now: time.Now}
	a.connect = a.connectEngine
	return a
}

func (a *app) root() *cobra.Command {
	out, errOut := a.out, a.errOut
	root := &cobra.Command{
		Use:   "mltrain",
		Short: "Turn one GPU node into a complete, verified Ray training lab",
		Long: `mltrain builds the "Train ML models with Ray" lab on one GPU node: a Ray head,
one Ray worker per GPU, MinIO for checkpoints, Prometheus and Grafana for metrics,
Jupyter to submit jobs from, and the Food-11 dataset; then it runs the exercises
and verifies them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	versionFlag(root)
	root.SetOut(out)
	root.SetErr(errOut)
	pf := root.PersistentFlags()
	pf.BoolVar(&a.json, "json", false, "machine-readable output (JSON)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "more detail")
	pf.StringVar(&a.stateDir, "state-dir", "", "where the lab's generated files and credentials live (default ~/.mltrain/<project>)")
	pf.StringVar(&a.project, "project", "mltrain", "lab name: Compose project, container and volume prefix (lowercase, at most "+strconv.Itoa(service.MaxProjectLen)+" characters)")

	root.AddCommand(
		a.versionCmd(),
		a.gpusCmd(), a.doctorCmd(),
		a.renderCmd(), a.buildCmd(), a.imagesCmd(),
		a.upCmd(), a.downCmd(), a.statusCmd(), a.logsCmd(), a.workerCmd(), a.credentialsCmd(), a.joinTokenCmd(), a.joinCmd(),
		a.dataCmd(), a.labCmd(), a.verifyCmd(), a.fleetCmd(), a.leaseCmd(),
		a.backupCmd(), a.restoreCmd(), a.genDocsCmd(),
	)
	// cobra adds 'completion' when it executes; add it now so its mistakes
	// are usage errors too.
	root.InitDefaultCompletionCmd()
	usageErrors(root)
	a.nextSteps(root)
	usageChecks := root.PersistentPreRunE
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := usageChecks(c, args); err != nil {
			return err
		}
		// Every command names its lab by --project: check it before any
		// name derived from it reaches the engine or the filesystem.
		if err := service.CheckProject(a.project); err != nil {
			return clierr.Usage(err, c.CommandPath())
		}
		a.remindLease(c)
		return nil
	}
	return root
}

// usageErrors makes every mistake in a command line a usage error: exit 2
// and a Next line naming the command's help. cobra reports them as plain
// errors (exit 1), and NoArgs's "unknown command" for a leaf's extra argument.
func usageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { // inherited by every command
		return clierr.Usage(fmt.Errorf("%s: %w", c.CommandPath(), err), c.CommandPath())
	})
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		// cobra checks these after this hook and returns plain errors: check first.
		err := c.ValidateRequiredFlags()
		if err == nil {
			err = c.ValidateFlagGroups()
		}
		if err != nil {
			return clierr.Usage(fmt.Errorf("%s: %w", c.CommandPath(), err), c.CommandPath())
		}
		return nil
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			if c.Args == nil {
				c.Args = cobra.NoArgs // a word that is not a subcommand is an unknown command
			}
			// cobra shows the help of a command that cannot run before it
			// checks arguments, so an unknown subcommand would exit 0.
			if !c.Runnable() {
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		}
		c.Args = usageArgs(c.Args)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usageArgs wraps a command's argument check so its errors are usage errors
// that say what is wrong in the user's terms.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if check == nil {
			return nil // cobra's default for a leaf: any arguments
		}
		err := check(c, args)
		if err == nil {
			return nil
		}
		path := c.CommandPath()
		switch {
		case clierr.Hint(err) != "":
			// the command's own check already says what to do
		case c.HasSubCommands() && len(args) > 0:
			err = fmt.Errorf("unknown command %q for %q%s", args[0], path, suggest(c, args[0]))
		case len(args) > 0 && check(c, nil) == nil && check(c, args[:1]) != nil:
			err = fmt.Errorf("%s takes no arguments (got %q)", path, strings.Join(args, " "))
		default:
			err = fmt.Errorf("%s: %w (usage: %s)", path, err, strings.TrimSuffix(c.UseLine(), " [flags]"))
		}
		return clierr.Usage(err, path)
	}
}

func suggest(c *cobra.Command, typed string) string {
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	s := c.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", s[0])
}

// signalled is the cause of a context a signal cancelled.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string { return "received " + s.sig.String() }

// interrupted turns the error of a command a signal stopped into one that
// says so (exit 128 + the signal) and tells to run the same command again.
// A command that finished despite the signal keeps its result.
func interrupted(ctx context.Context, err error, args []string) error {
	var s signalled
	if err == nil || !errors.As(context.Cause(ctx), &s) {
		return err
	}
	return clierr.Interrupted(err, s.sig, rerunLine(redactBundles(args)))
}

// rerunLine is the command line that runs args again, quoted for a shell.
func rerunLine(args []string) string {
	words := []string{"mltrain"}
	for _, a := range args {
		words = append(words, nextstep.ShellWord(a))
	}
	return strings.Join(words, " ")
}

// report prints err as every command's error reads (the error, then the
// Next line) and returns the exit code.
func report(w io.Writer, err error) int {
	if err != nil && !clierr.IsSilent(err) {
		fmt.Fprintf(w, "Error: %v\n", err)
		if h := clierr.Hint(err); h != "" {
			fmt.Fprintf(w, "Next: %s\n", h)
		}
	}
	return clierr.Code(err)
}

// StateDir is the lab's state directory (not created here).
func (a *app) StateDir() state.Dir { return a.lab().Dir() }

// reporter picks how progress is shown: JSON events with --json, a live view
// on a terminal, otherwise one line per step. Call the returned func when done.
func (a *app) reporter() (progress.Reporter, func()) {
	if a.json {
		return progress.NewJSON(a.errOut), func() {}
	}
	if liveTerminal(a.errOut) {
		t := progress.NewTTY(a.errOut)
		t.SetVerbose(a.verbose)
		return t, t.Close
	}
	l := progress.NewLines(a.errOut)
	l.Verbose = a.verbose
	return l, func() {}
}

// liveTerminal reports whether w can show the live view: a terminal that
// moves the cursor (TERM is not "dumb") and has a width (a pty nobody sized,
// as 'script' makes without a terminal, reports 0 columns and mpb would draw
// nothing).
func liveTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return false
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	return err == nil && cols > 0
}
