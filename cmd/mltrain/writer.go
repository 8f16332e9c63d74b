package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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

// writer is a command's hold on its lab as the lab's one writer: the
// engine, the progress view and the lab's lock, taken in that order by
// write and let go together by release.
type writer struct {
	eng  docker.Engine // nil when the command needs none
	rep  progress.Reporter
	lock *lock.Lock
	stop sync.Once
	done func()
}

// write starts a command that changes the lab: it connects to the engine,
// starts the progress view and takes the lab's lock (waiting visibly, or
// refusing with noWait). With hold false (join --render-only) it only
// starts the progress view.
func (a *app) write(cmd *cobra.Command, args []string, noWait, hold bool) (*writer, error) {
	w := &writer{}
	if hold {
		eng, err := a.connect(cmd.Context())
		if err != nil {
			return nil, err
		}
		w.eng = eng
	}
	w.rep, w.done = a.reporter()
	if hold {
		l, err := a.lockLab(cmd, args, w.eng, noWait, w.rep)
		if err != nil {
			w.release()
			return nil, err
		}
		w.lock = l
	}
	return w, nil
}

// progressDone ends the progress view, before the command prints.
func (w *writer) progressDone() { w.stop.Do(w.done) }

// release lets go of the lock and the engine.
func (w *writer) release() {
	w.progressDone()
	if w.lock != nil {
		w.lock.Release()
	}
	if w.eng != nil {
		w.eng.Close()
	}
}
