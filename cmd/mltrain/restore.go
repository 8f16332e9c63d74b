package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
)

func (a *app) restoreCmd() *cobra.Command {
	var force, noWait bool
	cmd := &cobra.Command{
		Use:   "restore SRC",
		Short: "Restore a backup (.tar.gz or s3://bucket/prefix) into the running lab",
		Long: `restore reads the backup SRC that 'mltrain backup' wrote into the running lab
('mltrain up' first): the bucket's objects, the workspace and the exercise records.
Every file's sha256 is checked against manifest.json before anything is written:
a damaged or truncated backup is refused with nothing restored. A workspace file
or record that is newer here than in the backup, and different, is kept and
listed; --force overwrites it. See docs/BACKUP.md.`,
		Example: "  mltrain restore lab-2026-11-29.tar.gz\n  mltrain restore s3://course-backups/alice --force",
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite workspace files and records that are newer here than in the backup")
	addNoWait(cmd.Flags(), &noWait, "")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		src, err := backup.ParseTarget(args[0])
		if err != nil {
			return clierr.Usage(err, cmd.CommandPath())
		}
		l, err := backup.Open(a.StateDir())
		if err != nil {
			return err
		}
		w, err := a.write(cmd, args, noWait, true)
		if err != nil {
			return err
		}
		defer w.release()
		res, err := backup.Restore(cmd.Context(), l, src, backup.Options{Reporter: w.rep, Force: force})
		w.progressDone()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		fmt.Fprintf(a.out, "Restored %d objects and %d files (%s) from %s into lab %q; %d already matched.\n",
			res.Objects, res.Files, humanize.IBytes(uint64(res.Bytes)), res.Source, a.project, res.Unchanged)
		if len(res.Conflicts) > 0 {
			fmt.Fprintf(a.out, "Kept %d local files newer than the backup's:\n", len(res.Conflicts))
			for _, c := range res.Conflicts {
				fmt.Fprintf(a.out, "  %s\n", c)
			}
			fmt.Fprintf(a.out, "'%s' overwrites them.\n", a.lab().Line("restore", args[0], "--force"))
		}
		return nil
	}
	return cmd
}
