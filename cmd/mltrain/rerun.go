package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/lab"
)

// commandLine is the command the user ran, with every flag they gave
// (global ones too, --project and --state-dir among them) and its
// arguments, quoted for a shell: the re-run a hint names. extra flags
// (e.g. --force) are added unless already given.
func commandLine(cmd *cobra.Command, args []string, extra ...string) string {
	words := strings.Fields(cmd.CommandPath())
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		given["--"+f.Name] = true
		if f.Value.Type() == "bool" {
			if f.Value.String() == "true" {
				words = append(words, "--"+f.Name)
			} else {
				words = append(words, "--"+f.Name+"=false")
			}
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+f.Name, lab.ShellWord(v))
			}
			return
		}
		words = append(words, "--"+f.Name, lab.ShellWord(f.Value.String()))
	})
	for _, x := range extra {
		if !given[x] {
			words = append(words, x)
		}
	}
	for _, a := range args {
		words = append(words, lab.ShellWord(a))
	}
	return strings.Join(words, " ")
}
