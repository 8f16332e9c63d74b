package main

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

// lab writes the command lines of next steps on this command's lab.
func (a *app) lab() nextstep.Commands {
	return nextstep.Commands{Lab: state.Lab{Project: a.project, StateDir: a.stateDir}}
}

// rerunWith names a command's placeholders for its arguments in the next
// steps (join's bundle is long and a secret: 'mltrain join BUNDLE').
const rerunWith = "rerun-args"

// nextSteps makes every command's error that says what went wrong but not
// what to type carry the next step for it, written for the command the
// user ran (nextstep.Commands.Hint).
func (a *app) nextSteps(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				err := run(cmd, args)
				if err == nil || clierr.Hint(err) != "" {
					return err
				}
				if h := a.commands(cmd, args).Hint(err); h != "" {
					return clierr.WithHint(err, h)
				}
				return err
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// commands are the command lines of next steps for c run with args: the
// lab's flags as this run resolved them, and c's own words, arguments and
// the flags the user gave, to run it again.
func (a *app) commands(c *cobra.Command, args []string) nextstep.Commands {
	ran := strings.Fields(c.CommandPath())[1:]
	if p, ok := c.Annotations[rerunWith]; ok {
		ran = append(ran, strings.Fields(p)...)
	} else {
		ran = append(ran, args...)
	}
	inherited := c.InheritedFlags()
	c.Flags().Visit(func(f *pflag.Flag) {
		if inherited.Lookup(f.Name) != nil {
			return // the lab's flags are Commands' own; --json, -v change no outcome
		}
		name := "--" + f.Name
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			for _, s := range v.GetSlice() {
				ran = append(ran, name, s)
			}
		default:
			switch {
			case f.Value.Type() == "stringToInt" || f.Value.Type() == "stringToString":
				// pflag prints a map as "[k=v,...]" in map order: give it
				// back as the flag is typed, one --port k=v each, sorted.
				pairs := strings.Split(strings.Trim(f.Value.String(), "[]"), ",")
				sort.Strings(pairs)
				for _, p := range pairs {
					if p != "" {
						ran = append(ran, name, p)
					}
				}
			case f.Name == "ray-token":
				ran = append(ran, name, "TOKEN") // never print a secret
			case f.Value.Type() == "bool" && f.Value.String() == "true":
				ran = append(ran, name)
			default:
				ran = append(ran, name, f.Value.String())
			}
		}
	})
	c2 := a.lab()
	c2.Ran = ran
	return c2
}
