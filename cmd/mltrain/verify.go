package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/verify"
)

func (a *app) verifyCmd() *cobra.Command {
	var (
		only     []string
		junit    string
		timeout  time.Duration
		dataFull bool
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Verify every lab step with evidence (table, --json, --junit)",
		Long: `Prove each step of the lab with what was read: the host's GPUs and mode, every
container running and healthy, each worker seeing exactly its own GPU, Ray's nodes
and token authentication, the MinIO bucket and credentials, the Food-11 volume,
Prometheus/Grafana/Ray metrics, Jupyter, and what each exercise ('mltrain lab')
recorded, checked against Ray's job history and MinIO.
Each check is pass, fail (with the command that fixes it) or skip (with why).
The exit status is 1 when any check fails. Nothing in the lab is changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			groups, err := verify.ValidateOnly(only)
			if err != nil {
				return clierr.WithCode(err, clierr.ExitUsage) // a usage error
			}
			eng, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer eng.Close()
			deps, err := verify.System(eng, a.StateDir(), verify.SystemOptions{Project: a.project})
			if err != nil {
				return err
			}
			rep := verify.Run(cmd.Context(), deps, verify.Options{Only: groups, Timeout: timeout, DataFull: dataFull, Commands: a.lab()})
			if junit != "" {
				if err := writeJUnitFile(junit, rep); err != nil {
					return err
				}
			}
			if a.json {
				err = printJSON(a.out, rep)
			} else {
				err = verify.WriteTable(a.out, rep, isTerminal(a.out))
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return clierr.Silent{Code: clierr.ExitFailure}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&only, "only", nil, "run only these check groups (repeatable or comma list): host, containers, gpu, ray, minio, data, metrics, jupyter, exercises")
	f.StringVar(&junit, "junit", "", "also write the result as JUnit XML to `FILE` (one testsuite per group)")
	f.DurationVar(&timeout, "timeout", 20*time.Second, "time limit of each check")
	f.BoolVar(&dataFull, "data-full", false, "count every Food-11 image in the volume (slower) instead of reading its manifest")
	_ = cmd.RegisterFlagCompletionFunc("only", completeOnly)
	return cmd
}

func writeJUnitFile(path string, rep verify.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return clierr.WithHint(fmt.Errorf("--junit %s: %w", path, err), "pass a writable path, e.g. --junit verify.xml")
	}
	werr := verify.WriteJUnit(f, rep)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("--junit %s: %w", path, werr)
	}
	return nil
}

// isTerminal says whether to colour: a terminal, unless NO_COLOR is set (no-color.org).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}
