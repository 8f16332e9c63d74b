package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
)

func (a *app) backupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup DEST",
		Short: "Back up the lab's checkpoints, workspace and records to a .tar.gz or s3://bucket/prefix",
		Long: `backup writes every object of the lab's bucket "ray" (checkpoints, Tune results),
the Jupyter workspace, the exercise records and the lab's plan (for reference) to
DEST, with a manifest.json of every file's size and sha256. The credentials never
go into a backup.

DEST is a path ending in .tar.gz (written beside itself and renamed when complete)
or s3://BUCKET/PREFIX, reached as the AWS tools are: AWS_ENDPOINT_URL (or
AWS_ENDPOINT_URL_S3) for MinIO or Ceph, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, or AWS_PROFILE of ~/.aws/credentials. To S3 only
what changed since the backup already at that prefix is sent; its manifest.json
is written last. See docs/BACKUP.md.`,
		Example: "  mltrain backup lab-2026-11-29.tar.gz\n  mltrain backup s3://course-backups/alice",
		Args:    cobra.ExactArgs(1),
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		dest, err := backup.ParseTarget(args[0])
		if err != nil {
			return clierr.Usage(err, cmd.CommandPath())
		}
		l, err := backup.Open(a.StateDir())
		if err != nil {
			return err
		}
		rep, done := a.reporter()
		res, err := backup.Backup(cmd.Context(), l, dest, backup.Options{Reporter: rep})
		done()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		fmt.Fprintf(a.out, "Backed up %d files (%s) of lab %q to %s.", res.Files, humanize.IBytes(uint64(res.Bytes)), a.project, res.Target)
		if dest.File == "" {
			fmt.Fprintf(a.out, " Sent %d changed (%s).", res.Uploaded, humanize.IBytes(uint64(res.Sent)))
		}
		fmt.Fprintf(a.out, "\nRestore it into a running lab with '%s'.\n", a.lab().Line("restore", args[0]))
		return nil
	}
	return cmd
}
