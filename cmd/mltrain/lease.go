package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/plan"
)

// leaseExample is the lease end the next steps of a bad one offer.
const leaseExample = "+2h50m"

func (a *app) leaseCmd() *cobra.Command {
	var clear, noWait bool
	cmd := &cobra.Command{
		Use:   "lease [TIME]",
		Short: "Show or set when the node's lease ends; mltrain reminds you to back up before it",
		Long: `The course's node is leased for a few hours and wiped when the lease ends. Tell
the lab when: TIME is an RFC 3339 time (2026-11-29T17:00:00Z, or with an offset
such as +01:00) or a duration from now (+2h50m). 'mltrain up --lease-end TIME'
sets it too; re-ups keep it. Without TIME, lease shows it; --clear forgets it.

From 30 minutes before the end every mltrain command prints a line with the
backup command, 'mltrain status' shows the time left, and 'mltrain lab' refuses
an exercise that could not finish before the end.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if clear && len(args) > 0 {
				return clierr.Usage(fmt.Errorf("lease: give TIME or --clear, not both (got %q and --clear)", args[0]), cmd.CommandPath())
			}
			dir := a.StateDir()
			if len(args) == 0 && !clear {
				if _, err := dir.State(); err != nil {
					return err
				}
				return a.printLease(dir.LeaseEnd(), time.Time{}, false)
			}
			var end time.Time
			if !clear {
				var err error
				if end, err = a.parseLeaseEnd(args[0], a.commands(cmd, []string{leaseExample}).Again()); err != nil {
					return err
				}
			}
			// up writes state.json too: wait for a running one to finish.
			w, err := a.write(cmd, args, noWait, true)
			if err != nil {
				return err
			}
			defer w.release()
			prev, err := dir.SetLeaseEnd(end)
			w.progressDone()
			if err != nil {
				return err
			}
			return a.printLease(end, prev, true)
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "forget the lease end (no reminders, no refusals)")
	addNoWait(cmd.Flags(), &noWait, "")
	return cmd
}

// parseLeaseEnd reads a lease end the user gave; a bad one is a usage
// error naming it, its next step again, the user's command with an end
// that reads.
func (a *app) parseLeaseEnd(value, again string) (time.Time, error) {
	end, err := plan.ParseLeaseEnd(value, a.now())
	if err != nil {
		return time.Time{}, clierr.WithCode(clierr.WithHint(err, "give when the node's lease ends, e.g. '"+again+"'"), clierr.ExitUsage)
	}
	return end, nil
}

// printLease says where the lab stands with its lease (after a change from
// prev when set): the time left, and the backup line once it is near.
func (a *app) printLease(end, prev time.Time, set bool) error {
	l := plan.LeaseAt(end, a.now())
	if a.json {
		return printJSON(a.out, struct {
			Lease *plan.Lease `json:"lease"`
		}{l})
	}
	var b strings.Builder
	switch {
	case l == nil && set:
		fmt.Fprintf(&b, "Lease end cleared: no reminders to back up, no exercise refused. Set it again: '%s'.\n", a.lab().Line("lease", "TIME"))
	case l == nil:
		fmt.Fprintf(&b, "No lease end recorded for lab %q. Set it: '%s' (RFC 3339, or %s from now).\n", a.project, a.lab().Line("lease", "TIME"), leaseExample)
	default:
		if set {
			was := ""
			if !prev.IsZero() && !prev.Equal(end) {
				was = " (was " + prev.UTC().Format(time.RFC3339) + ")"
			}
			fmt.Fprintf(&b, "Lease end set to %s%s: the lease %s.\n", l.End.Format(time.RFC3339), was, l.Left)
		} else {
			fmt.Fprintf(&b, "The lease %s: %s.\n", l.Left, l.End.Format(time.RFC3339))
		}
		if r := l.Reminder(a.backupLine()); r != "" {
			fmt.Fprintln(&b, r)
		} else {
			fmt.Fprintf(&b, "From %s before the end every mltrain command reminds you to back up: '%s'.\n", plan.Span(plan.LeaseWarn), a.backupLine())
		}
	}
	_, err := fmt.Fprint(a.out, b.String())
	return err
}

// backupLine is the command line that saves this lab's work.
func (a *app) backupLine() string { return exercise.BackupLine(a.lab()) }

// remindLease prints the one line every command prints from plan.LeaseWarn
// before the lab's lease ends: the backup command. To stderr, so output
// meant for a pipe is untouched; as a JSON event with --json. Not for
// shell completion (it would garble the prompt) nor for lease, which says
// it itself.
func (a *app) remindLease(c *cobra.Command) {
	for p := c; p != nil; p = p.Parent() {
		switch p.Name() {
		case cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd, "completion", "help", "lease":
			return
		}
	}
	end := a.StateDir().LeaseEnd()
	if f := c.Flags().Lookup("lease-end"); f != nil && f.Changed {
		// up --lease-end: the end it is about to record, not the old one
		// (a bad value is up's to report).
		var err error
		if end, err = plan.ParseLeaseEnd(f.Value.String(), a.now()); err != nil {
			return
		}
	}
	l := plan.LeaseAt(end, a.now())
	if l == nil {
		return
	}
	line := l.Reminder(a.backupLine())
	switch {
	case line == "":
	case a.json:
		progress.Warning(progress.NewJSON(a.errOut), line)
	default:
		fmt.Fprintln(a.errOut, line)
	}
}

// leaseFits refuses exercises (name, or every one for lab all) that could
// not end before the lab's lease does; the next steps: the same run with
// --quick when that fits, a backup first, and correcting the lease end.
func (a *app) leaseFits(cmd *cobra.Command, args []string, name string, o exercise.Options) error {
	what, names := "exercise "+name, []string{name}
	if name == labAll {
		what, names = "every exercise", exercise.Names()
	}
	err := exercise.CheckLease(what, names, o, plan.LeaseAt(a.StateDir().LeaseEnd(), a.now()))
	var le *exercise.LeaseError
	if !errors.As(err, &le) {
		return err
	}
	var next []string
	if le.QuickFits() {
		c := a.commands(cmd, args)
		c.Ran = append(c.Ran, "--quick")
		next = append(next, fmt.Sprintf("a rehearsal fits (up to %s): '%s'", plan.Span(le.QuickTakes), c.Again()))
	}
	next = append(next, fmt.Sprintf("back up first: '%s', and copy the file off the node", a.backupLine()),
		fmt.Sprintf("if the lease end is wrong, correct it: '%s'", a.lab().Line("lease", "TIME")))
	return clierr.WithHint(err, strings.Join(next, "; "))
}
