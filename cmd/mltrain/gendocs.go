package main

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// genDocsCmd writes the man pages and shell completions the .deb and .rpm
// install, from this very command tree, so they cannot drift from the
// binary. Hidden: GoReleaser's before-hook runs it, students never do.
func (a *app) genDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "write man pages (DIR/man) and shell completions (DIR/completions) for packaging",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := genDocs(c.Root(), args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.out, "wrote %s\n", args[0])
			return err
		},
	}
}

// genDocs writes DIR/man/<command path>.1.gz for every visible command
// (gzipped, as Debian installs man pages) and DIR/completions/mltrain.bash,
// _mltrain (zsh) and mltrain.fish: the scripts `mltrain completion` prints.
func genDocs(root *cobra.Command, dir string) error {
	man, comp := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("gen-docs: %w", err)
		}
	}
	// SOURCE_DATE_EPOCH, when set, dates the pages (cobra reads it): reproducible builds.
	header := &doc.GenManHeader{Title: "MLTRAIN", Section: "1", Source: "mltrain " + version, Manual: "mltrain manual"}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root {
			return nil // hidden ones (this one included) and help topics
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1.gz"
		h := *header
		if err := writeFile(filepath.Join(man, name), true, func(f *os.File, w *gzip.Writer) error { return doc.GenMan(c, &h, w) }); err != nil {
			return err
		}
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return err
	}
	scripts := map[string]func(f *os.File) error{
		"mltrain.bash": func(f *os.File) error { return root.GenBashCompletionV2(f, true) },
		"_mltrain":     func(f *os.File) error { return root.GenZshCompletion(f) },
		"mltrain.fish": func(f *os.File) error { return root.GenFishCompletion(f, true) },
	}
	for name, gen := range scripts {
		if err := writeFile(filepath.Join(comp, name), false, func(f *os.File, _ *gzip.Writer) error { return gen(f) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes path through gen, gzipped when zip is set.
func writeFile(path string, zip bool, gen func(f *os.File, w *gzip.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("gen-docs: %s: %w", path, cerr)
		}
	}()
	var w *gzip.Writer
	if zip {
		w = gzip.NewWriter(f)
	}
	if err := gen(f, w); err != nil {
		return fmt.Errorf("gen-docs: %s: %w", path, err)
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return fmt.Errorf("gen-docs: %s: %w", path, err)
		}
	}
	return nil
}
