package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab"
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
}

func newRoot(out, errOut io.Writer) *cobra.Command { return newApp(out, errOut).root() }

// newApp is the CLI's state before flags are parsed; tests replace connect.
func newApp(out, errOut io.Writer) *app {
	a := &app{out: out, errOut: errOut}
	a.connect = func(ctx context.Context) (docker.Engine, error) {
		e, err := docker.Connect(ctx)
		if err != nil {
			return nil, clierr.WithHint(err, "start Docker ('sudo systemctl start docker') or set DOCKER_HOST, then run 'mltrain doctor'")
		}
		return e, nil
	}
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
		Version:       version,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	pf := root.PersistentFlags()
	pf.BoolVar(&a.json, "json", false, "machine-readable output (JSON)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "more detail")
	pf.StringVar(&a.stateDir, "state-dir", "", "where the lab's generated files and credentials live (default ~/.mltrain/<project>)")
	pf.StringVar(&a.project, "project", "mltrain", "lab name: Compose project, container and volume prefix")

	root.AddCommand(
		a.versionCmd(),
		a.gpusCmd(), a.doctorCmd(),
		a.renderCmd(), a.buildCmd(), a.imagesCmd(),
		a.upCmd(), a.downCmd(), a.statusCmd(), a.logsCmd(), a.workerCmd(),
		a.dataCmd(), a.labCmd(), a.verifyCmd(),
	)
	return root
}

// StateDir is the lab's state directory (not created here).
func (a *app) StateDir() lab.StateDir {
	if a.stateDir != "" {
		return lab.StateDir(a.stateDir)
	}
	return lab.DefaultStateDir(a.project)
}

// reporter picks how progress is shown: JSON events with --json, a live view
// on a terminal, otherwise one line per step. Call the returned func when done.
func (a *app) reporter() (progress.Reporter, func()) {
	if a.json {
		return progress.NewJSON(a.errOut), func() {}
	}
	if f, ok := a.errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		t := progress.NewTTY(a.errOut)
		return t, t.Close
	}
	l := progress.NewLines(a.errOut)
	l.Verbose = a.verbose
	return l, func() {}
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print mltrain's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json {
				return printJSON(a.out, map[string]string{"version": version})
			}
			_, err := fmt.Fprintf(a.out, "mltrain %s\n", version)
			return err
		},
	}
}
