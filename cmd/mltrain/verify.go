package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		htmlFile string
		timeout  time.Duration
		dataFull bool
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Verify every lab step with evidence (table, --json, --junit, --html)",
		Long: `Prove each step of the lab with what was read: the host's GPUs and mode, every
container running and healthy, each worker seeing exactly its own GPU, Ray's nodes
and token authentication, the MinIO bucket and credentials, the Food-11 volume,
Prometheus/Grafana/Ray metrics, Jupyter, and what each exercise ('mltrain lab')
recorded, checked against Ray's job history and MinIO.
Each check is pass, fail (with the command that fixes it) or skip (with why).
The exit status is 1 when any check fails. Nothing in the lab is changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printed, err := a.verify(cmd, verifyRun{only: only, junit: junit, html: htmlFile, timeout: timeout, dataFull: dataFull})
			if err != nil && a.json && !printed {
				// --json always prints JSON: tools ('mltrain fleet verify')
				// parse stdout; an object says why there is no report.
				f := verify.NewFailure(err, a.commands(cmd, nil).Hint(err))
				f.Project = a.project
				if perr := printJSON(a.out, f); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&only, "only", nil, "run only these check groups (repeatable or comma list): host, containers, gpu, ray, minio, data, metrics, jupyter, exercises")
	f.StringVar(&junit, "junit", "", "also write the result as JUnit XML to `FILE` (one testsuite per group)")
	f.StringVar(&htmlFile, "html", "", "also write the result as one self-contained HTML page to `FILE`")
	f.DurationVar(&timeout, "timeout", 20*time.Second, "time limit of each check")
	f.BoolVar(&dataFull, "data-full", false, "count every Food-11 image in the volume (slower) instead of reading its manifest")
	_ = cmd.RegisterFlagCompletionFunc("only", completeOnly)
	return cmd
}

// verifyRun is one verify's flags.
type verifyRun struct {
	only     []string
	junit    string
	html     string
	timeout  time.Duration
	dataFull bool
}

// verify runs the checks and prints the report; printed says whether it
// printed it.
func (a *app) verify(cmd *cobra.Command, o verifyRun) (printed bool, err error) {
	groups, err := verify.ValidateOnly(o.only)
	if err != nil {
		return false, clierr.WithCode(err, clierr.ExitUsage)
	}
	eng, err := a.connect(cmd.Context())
	if err != nil {
		return false, err
	}
	defer eng.Close()
	deps, err := verify.System(eng, a.StateDir(), verify.SystemOptions{Project: a.project})
	if err != nil {
		return false, err
	}
	rep := verify.Run(cmd.Context(), deps, verify.Options{Only: groups, Timeout: o.timeout, DataFull: o.dataFull, Commands: a.lab()})
	// Kept for 'mltrain backup'; a state dir verify may only read (a
	// read-only copy) loses the copy, not the report.
	if err := verify.Save(a.StateDir(), rep); err != nil {
		fmt.Fprintf(a.errOut, "Warning: the report is not kept for 'mltrain backup': %v\n", err)
	}
	if a.json {
		err = printJSON(a.out, rep)
	} else {
		err = verify.WriteTable(a.out, rep, isTerminal(a.out))
	}
	if err != nil {
		return false, err
	}
	// After the report: a file that cannot be written loses no check.
	if o.junit != "" {
		if err := writeReportFile("--junit", o.junit, func(w io.Writer) error { return verify.WriteJUnit(w, rep) }); err != nil {
			return true, err
		}
	}
	if o.html != "" {
		name, _ := os.Hostname()
		nodes := []verify.Node{verify.SingleNode(name, rep)}
		write := func(w io.Writer) error { return verify.WriteHTML(w, "mltrain verify "+rep.Project, nodes, rep.Started) }
		if err := writeReportFile("--html", o.html, write); err != nil {
			return true, err
		}
		a.wrote("HTML report", o.html)
	}
	if !rep.OK {
		return true, clierr.Silent{Code: clierr.ExitFailure}
	}
	return true, nil
}

// wrote says where a report file went: on stdout after the table, on
// stderr beside --json (stdout is the JSON alone).
func (a *app) wrote(what, path string) {
	w := a.out
	if a.json {
		w = a.errOut
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fmt.Fprintf(w, "%s written to %s\n", what, path)
}

// writeReportFile writes a report file that a flag (--junit, --html) named.
func writeReportFile(flag, path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return clierr.WithHint(fmt.Errorf("%s %s: %w", flag, path, err), "pass a writable path, e.g. "+flag+" verify"+map[string]string{"--junit": ".xml", "--html": ".html"}[flag])
	}
	werr := write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("%s %s: %w", flag, path, werr)
	}
	return nil
}

// isTerminal says whether to colour: a terminal, unless NO_COLOR is set (no-color.org).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}
