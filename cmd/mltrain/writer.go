package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

// addNoWait adds --no-wait to a command that changes the lab.
func addNoWait(fl *pflag.FlagSet, p *bool, usage string) {
	if usage == "" {
		usage = "fail at once when another mltrain command is changing this lab, instead of waiting for it to finish"
	}
	fl.BoolVar(p, "no-wait", false, usage)
}

// lockLab makes this run the lab's one writer (up, down, join, worker and
// the exercises that stop workers); Release the lock when done. Another
// writer's run is waited for with a line through rep; with noWait the
// error names the holder and the command to run once it is done.
func (a *app) lockLab(cmd *cobra.Command, args []string, eng docker.Engine, noWait bool, rep progress.Reporter) (*lock.Lock, error) {
	words := strings.Fields(cmd.CommandPath())
	if p, ok := cmd.Annotations[rerunWith]; ok {
		words = append(words, strings.Fields(p)...) // join's bundle is a secret
	} else {
		words = append(words, args...)
	}
	l, err := lifecycle.LockLab(cmd.Context(), lifecycle.LockOptions{
		Engine: eng.Host(), Project: a.project, Command: strings.Join(words, " "), NoWait: noWait,
	}, rep)
	var held *lock.HeldError
	if errors.As(err, &held) {
		c := a.commands(cmd, args)
		c.Ran = slices.DeleteFunc(c.Ran, func(w string) bool { return w == "--no-wait" })
		return nil, clierr.WithHint(err, fmt.Sprintf("wait for it to finish, then run '%s' (without --no-wait it waits by itself)", c.Again()))
	}
	return l, err
}
