package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/fleet"
	"github.com/mltrain/mltrain/lab/verify"
)

func (a *app) fleetCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "fleet", Short: "Act on many students' nodes over SSH (fleet verify)"}
	var o fleet.Options
	var junit, htmlFile string
	v := &cobra.Command{
		Use:   "verify HOSTS",
		Short: "Run 'mltrain verify' on every host of a hosts file over SSH; one report",
		Long: `HOSTS is a file, one host per line: [user@]address[:port] [label] (# comments).
Each host runs 'mltrain verify --json' (with --project, --state-dir, --only and
--data-full when given)
and ends in one state: ` + strings.Join(fleet.States, ", ") + `.
The exit status is 0 only when every host passed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Parallel < 1 || o.Timeout <= 0 {
				return clierr.Usage(fmt.Errorf("--parallel (%d) and --timeout (%s) must be positive", o.Parallel, o.Timeout), cmd.CommandPath())
			}
			groups, err := verify.ValidateOnly(o.Only)
			if err != nil {
				return clierr.WithCode(err, clierr.ExitUsage)
			}
			o.Only = groups
			hosts, err := fleet.ReadHosts(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("project") {
				o.Project = a.project
			}
			o.StateDir = a.stateDir
			r, done := a.reporter()
			if !a.json && !liveTerminal(a.errOut) {
				r = endsOnly{r} // piped: a line when a host finishes
			}
			o.Progress = r
			rep, err := fleet.Run(cmd.Context(), hosts, o)
			done()
			if err != nil {
				return err
			}
			for _, file := range []struct {
				flag, path string
				write      func(io.Writer) error
			}{{"--junit", junit, rep.WriteJUnit}, {"--html", htmlFile, rep.WriteHTML}} {
				if file.path != "" {
					if err := writeReportFile(file.flag, file.path, file.write); err != nil {
						return err
					}
				}
			}
			if a.json {
				err = printJSON(a.out, rep)
			} else {
				err = fleet.WriteTable(a.out, rep, isTerminal(a.out))
			}
			if err == nil && htmlFile != "" {
				a.wrote("HTML report", htmlFile)
			}
			if err == nil && !rep.OK {
				err = clierr.Silent{Code: clierr.ExitFailure}
			}
			return err
		},
	}
	fl := v.Flags()
	fl.StringVar(&o.Identity, "identity", "", "private key `FILE` (default: the SSH agent, then ~/.ssh/id_*)")
	fl.StringVar(&o.KnownHosts, "known-hosts", "", "known_hosts `FILE` (default ~/.ssh/known_hosts)")
	fl.BoolVar(&o.AcceptNew, "accept-new", false, "record unknown host keys (as ssh's StrictHostKeyChecking=accept-new); a changed key is always refused")
	fl.IntVar(&o.Parallel, "parallel", 16, "hosts checked at once")
	fl.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "time limit of each host, connecting included")
	fl.StringVar(&o.Mltrain, "mltrain", "mltrain", "the mltrain command on the hosts (a `PATH` there)")
	fl.StringSliceVar(&o.Only, "only", nil, "the hosts run only these check groups (repeatable or comma list), as 'verify --only'")
	fl.BoolVar(&o.DataFull, "data-full", false, "the hosts count every Food-11 image, as 'verify --data-full'")
	_ = v.RegisterFlagCompletionFunc("only", completeOnly)
	fl.StringVar(&junit, "junit", "", "also write JUnit XML to `FILE` (one testsuite per host)")
	fl.StringVar(&htmlFile, "html", "", "also write one self-contained HTML page to `FILE`")
	cmd.AddCommand(v)
	return cmd
}

// endsOnly passes on what is not a step's start or progress.
type endsOnly struct{ progress.Reporter }

func (e endsOnly) Report(ev progress.Event) {
	if ev.Kind != progress.Start && ev.Kind != progress.Update {
		e.Reporter.Report(ev)
	}
}
