package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/lock"
)

func (a *app) dataCmd() *cobra.Command {
	data := &cobra.Command{
		Use:   "data",
		Short: "Prepare dataset volumes (food11)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.WithCode(clierr.WithHint(fmt.Errorf("name a dataset"), a.lab().Line("data", "food11")), clierr.ExitUsage)
		},
	}
	var o food11.Options
	var verify bool
	f11 := &cobra.Command{
		Use:   "food11",
		Short: "Download (resumable, checksummed) and load the Food-11 dataset volume, or --verify it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer eng.Close()
			rep, done := a.reporter()
			defer done()
			if verify {
				r, err := food11.Verify(cmd.Context(), eng, food11.VerifyOptions{Volume: o.Volume, Strict: o.Strict, Reporter: rep})
				done()
				if a.json {
					if perr := printJSON(a.out, r); perr != nil {
						return perr
					}
				} else if r.Files > 0 {
					printCounts(a.out, r.Found)
				}
				return err
			}
			o.CacheDir, o.Reporter = a.StateDir().File("cache"), rep
			o.Lock.Command = a.lab().Line("data", "food11")
			res, err := food11.Run(cmd.Context(), eng, o)
			done()
			if err != nil {
				return a.dataHint(err, cmd)
			}
			if a.json {
				return printJSON(a.out, res)
			}
			if res.Download != nil {
				fmt.Fprintf(a.out, "sha256 %s  %s\n", res.Download.SHA256, res.Download.Path)
			}
			what := "loaded"
			if res.NoOp {
				what = "already holds this zip (nothing to do; --force rebuilds)"
			}
			fmt.Fprintf(a.out, "volume %s %s: sha256 %s\n", res.Volume, what, res.Digest)
			printCounts(a.out, res.Manifest.Counts)
			fmt.Fprintf(a.out, "workers mount it read-only at /mnt: FOOD11_DATA_DIR=/mnt/%s\n", food11.Root)
			return nil
		},
	}
	fl := f11.Flags()
	fl.StringVar(&o.URL, "url", "", "download the zip from this URL (default: the course's mirror)")
	fl.StringVar(&o.Zip, "zip", "", "load this local zip instead of downloading")
	fl.StringVar(&o.SHA256, "sha256", "", "expected SHA-256 of the zip (hex); a mismatch is an error")
	fl.StringVar(&o.Volume, "volume", food11.DefaultVolume, "Docker volume to load")
	fl.BoolVar(&o.Force, "force", false, "rebuild the volume even if it already holds this zip")
	fl.BoolVar(&o.Strict, "strict", false, "counts that differ from the published Food-11 are an error, not a warning")
	fl.BoolVar(&o.AllowMissingClasses, "allow-missing-classes", false, "load a zip in which a split lacks a whole class (refused by default: the class folder would be empty, and training's ImageFolder refuses an empty one)")
	fl.BoolVar(&o.Lock.NoWait, "no-wait", false, "fail at once when another load of the volume runs, instead of waiting for it")
	fl.BoolVar(&verify, "verify", false, "check the existing volume against its manifest and the published counts; load nothing")
	f11.MarkFlagsMutuallyExclusive("url", "zip")
	data.AddCommand(f11)
	return data
}

// printCounts prints images per split, in the course's split order.
func printCounts(w io.Writer, c food11.Counts) {
	var parts []string
	for _, s := range food11.Splits {
		parts = append(parts, fmt.Sprintf("%s %d", s, c.Split(s)))
	}
	fmt.Fprintf(w, "  %d images: %s\n", c.Total(), strings.Join(parts, ", "))
}

// dataHint names the re-run of a failed load with every flag given: the
// dataset package says what to do first, this layer knows the command.
func (a *app) dataHint(err error, cmd *cobra.Command) error {
	c := a.commands(cmd, nil)
	var re *food11.RerunError
	var held *lock.HeldError
	switch {
	case errors.As(err, &re):
		if re.Force && !slices.Contains(c.Ran, "--force") {
			c.Ran = append(c.Ran, "--force")
		}
		line := "run '" + c.Again() + "'"
		if re.Do != "" {
			line = re.Do + ", then " + line
		}
		return clierr.WithHint(err, line)
	case errors.As(err, &held):
		return clierr.WithHint(err, "wait for it to finish, then run '"+c.Again()+"' (without --no-wait it waits by itself)")
	}
	return err
}
