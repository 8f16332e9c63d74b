package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/images"
)

// checkedString is a string flag whose value is checked as it is parsed:
// a bad value is then a flag error, which root's flag error func makes a
// usage error (exit 2) before the command reads stdin, the state or the
// engine, whatever its RunE does first.
type checkedString struct {
	p     *string
	check func(string) error
}

func (v *checkedString) String() string { return *v.p }
func (v *checkedString) Type() string   { return "string" }
func (v *checkedString) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

func checkedStringVar(fl *pflag.FlagSet, p *string, name, value, usage string, check func(string) error) {
	*p = value
	fl.Var(&checkedString{p: p, check: check}, name, usage)
}

// pullFlag is --pull: missing, always or never.
func pullFlag(fl *pflag.FlagSet, p *string, usage string) {
	checkedStringVar(fl, p, "pull", string(images.PullMissing), usage, func(s string) error {
		_, err := images.ParsePullPolicy(s)
		return err
	})
}

// vendorFlag is build's --vendor: auto, nvidia, amd or cpu.
func vendorFlag(fl *pflag.FlagSet, p *string, usage string) {
	checkedStringVar(fl, p, "vendor", "auto", usage, func(s string) error {
		switch s {
		case "auto", "nvidia", "amd", "cpu":
			return nil
		}
		return clierr.Hintf("use --vendor auto, nvidia, amd or cpu", "--vendor %q is not a GPU vendor (auto, nvidia, amd, cpu)", s)
	})
}

// tailFlag is logs's --tail: a number of lines, or all.
func tailFlag(fl *pflag.FlagSet, p *string, usage string) {
	checkedStringVar(fl, p, "tail", "200", usage, func(s string) error {
		if s == "all" {
			return nil
		}
		if n, err := strconv.Atoi(s); err != nil || n < 0 {
			return clierr.Hintf("use --tail N (a number of lines, 0 or more) or --tail all", "--tail %q is not a number of lines, nor all", s)
		}
		return nil
	})
}

// notNegative is a usage error naming the first of names (numbers or
// durations) set below zero: a negative count or wait means nothing, and
// taking it for the default would hide the mistake.
func notNegative(c *cobra.Command, names ...string) error {
	for _, n := range names {
		f := c.Flags().Lookup(n)
		if f == nil || !f.Changed {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(f.Value.String()), "-") {
			return clierr.Usage(clierr.Hintf(fmt.Sprintf("give --%s 0 or more (0 keeps the default), or leave it out", n),
				"%s: --%s %s: must not be negative", c.CommandPath(), n, f.Value.String()), c.CommandPath())
		}
	}
	return nil
}
