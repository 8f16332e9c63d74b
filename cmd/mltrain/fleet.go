package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
			groups, err := verify.ValidateOnly(o.Only)
			if err != nil {
				return clierr.WithCode(err, clierr.ExitUsage)
			}
			o.Only = groups
			hosts, done, err := a.fleetStart(cmd, args[0], &o)
			if err != nil {
				return err
			}
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
	sshFlags(fl, &o, 3*time.Minute)
	fl.StringSliceVar(&o.Only, "only", nil, "the hosts run only these check groups (repeatable or comma list), as 'verify --only'")
	fl.BoolVar(&o.DataFull, "data-full", false, "the hosts count every Food-11 image, as 'verify --data-full'")
	_ = v.RegisterFlagCompletionFunc("only", completeOnly)
	fl.StringVar(&junit, "junit", "", "also write JUnit XML to `FILE` (one testsuite per host)")
	fl.StringVar(&htmlFile, "html", "", "also write one self-contained HTML page to `FILE`")
	cmd.AddCommand(v, a.fleetBackupCmd())
	return cmd
}

// sshFlags are the flags of every fleet command: how to reach the hosts.
func sshFlags(fl *pflag.FlagSet, o *fleet.Options, timeout time.Duration) {
	fl.StringVar(&o.Identity, "identity", "", "private key `FILE` (default: the SSH agent, then ~/.ssh/id_*)")
	fl.StringVar(&o.KnownHosts, "known-hosts", "", "known_hosts `FILE` (default ~/.ssh/known_hosts)")
	fl.BoolVar(&o.AcceptNew, "accept-new", false, "record unknown host keys (as ssh's StrictHostKeyChecking=accept-new); a changed key is always refused")
	fl.IntVar(&o.Parallel, "parallel", 16, "hosts worked on at once")
	fl.DurationVar(&o.Timeout, "timeout", timeout, "time limit of each host, connecting included")
	fl.StringVar(&o.Mltrain, "mltrain", "mltrain", "the mltrain command on the hosts (a `PATH` there)")
}

// fleetStart checks the SSH flags, reads the hosts file, passes the lab's
// --project and --state-dir on to the hosts and starts the progress view
// (done ends it).
func (a *app) fleetStart(cmd *cobra.Command, hostsFile string, o *fleet.Options) ([]fleet.Host, func(), error) {
	if o.Parallel < 1 || o.Timeout <= 0 {
		return nil, nil, clierr.Usage(fmt.Errorf("--parallel (%d) and --timeout (%s) must be positive", o.Parallel, o.Timeout), cmd.CommandPath())
	}
	hosts, err := fleet.ReadHosts(hostsFile)
	if err != nil {
		return nil, nil, err
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
	return hosts, done, nil
}

// endsOnly passes on what is not a step's start or progress.
type endsOnly struct{ progress.Reporter }

func (e endsOnly) Report(ev progress.Event) {
	if ev.Kind != progress.Start && ev.Kind != progress.Update {
		e.Reporter.Report(ev)
	}
}
