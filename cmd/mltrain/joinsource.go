package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
)

// safeJoinForms names the ways to give join its bundle that keep it out of
// ps and /proc/PID/cmdline, for help, warnings and hints.
var safeJoinForms = "echo 'BUNDLE' | mltrain join - (echo is the shell's own: no process has the bundle in its command line), " +
	"mltrain join --bundle-file FILE (a file only you may read: chmod 600 FILE), or " + plan.JoinBundleEnv + "=BUNDLE in the environment"

// joinLine is the line join-token prints: the bundle reaches join on its
// stdin from the shell's own echo, so it is in no process's command line.
func joinLine(b plan.JoinBundle) string { return "echo '" + b.Encode() + "' | mltrain join -" }

// joinBundle reads the bundle from where the user gave it: the argument
// ("-" is stdin), --bundle-file, $MLTRAIN_JOIN_BUNDLE, or stdin when it is
// not a terminal. It sets the placeholder next steps write for it (never
// the bundle) and warns when the bundle came on the command line.
func (a *app) joinBundle(cmd *cobra.Command, args []string, file string) (plan.JoinBundle, error) {
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	if arg != "" && file != "" {
		got := "an argument"
		if arg == "-" {
			got = "'-' (stdin)"
		}
		return plan.JoinBundle{}, clierr.WithCode(clierr.Hintf("give it once: "+safeJoinForms,
			"join takes the bundle one way, got both %s and --bundle-file", got), clierr.ExitUsage)
	}
	env, inEnv := os.LookupEnv(plan.JoinBundleEnv)
	switch {
	case file != "":
		cmd.Annotations[rerunWith] = "" // --bundle-file is among the flags written back
		b, err := plan.ReadJoinBundleFile(file)
		if errors.Is(err, plan.ErrBundleFileExposed) {
			return b, clierr.WithHint(err, fmt.Sprintf("run 'chmod 600 %s', then '%s'", nextstep.ShellWord(file), a.commands(cmd, args).Again()))
		}
		if errors.Is(err, plan.ErrBundleFileLink) {
			return b, clierr.WithHint(err, "give --bundle-file the path of the file itself, not of a link to it")
		}
		return b, err
	case arg != "" && arg != "-":
		fmt.Fprintf(a.errOut, "Warning: a join bundle on the command line can be read by every user of this host (ps, /proc/PID/cmdline) "+
			"and stays in your shell history; it holds the lab's Ray token and MinIO keys. Give it off the command line: %s.\n", safeJoinForms)
		return plan.DecodeJoinBundle(arg)
	case arg == "" && inEnv:
		cmd.Annotations[rerunWith] = ""
		return plan.JoinBundleFromText(env)
	}
	cmd.Annotations[rerunWith] = "-"
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if arg == "" {
			return plan.JoinBundle{}, clierr.WithCode(clierr.Hintf("give it off the command line: "+safeJoinForms+
				"; it comes from 'mltrain join-token' on the lab's first host", "join needs the lab's join bundle"), clierr.ExitUsage)
		}
		// 'join -' at a terminal: pasted, not echoed (a screen is read
		// over shoulders and by terminal recorders).
		fmt.Fprint(a.errOut, "Paste the join bundle from 'mltrain join-token' (not shown), then Enter: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.errOut)
		if err != nil {
			return plan.JoinBundle{}, fmt.Errorf("read the join bundle from the terminal: %w", err)
		}
		return plan.JoinBundleFromText(string(b))
	}
	text, err := plan.ReadJoinBundleText(in)
	if err != nil {
		return plan.JoinBundle{}, err
	}
	if text == "" {
		return plan.JoinBundle{}, clierr.WithCode(clierr.Hintf("pipe the bundle in, or give it another way: "+safeJoinForms,
			"join read no bundle from stdin (it was empty)"), clierr.ExitUsage)
	}
	return plan.JoinBundleFromText(text)
}

// redactBundles is args with every join bundle replaced by BUNDLE: a
// command line written back (an interrupted join's) never carries one.
func redactBundles(args []string) []string {
	out := make([]string, len(args))
	for i, w := range args {
		out[i] = w
		if plan.IsJoinBundle(w) {
			out[i] = "BUNDLE"
		}
	}
	return out
}

// joinHelp is what join --help says about giving the bundle.
var joinHelp = strings.Join([]string{
	"The bundle holds the lab's Ray token and MinIO keys: give it off the command line, where",
	"every user of this host could read it (ps, /proc/PID/cmdline):",
	"  echo 'BUNDLE' | mltrain join -          the line 'mltrain join-token' prints (echo is the shell's own)",
	"  mltrain join --bundle-file FILE         FILE only you may read (chmod 600), never a symbolic link",
	"  " + plan.JoinBundleEnv + "=BUNDLE mltrain join   from the environment",
	"With no argument join reads stdin when it is not a terminal. 'mltrain join BUNDLE' still",
	"works, with a warning.",
}, "\n")
