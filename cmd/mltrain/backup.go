package main

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/verify"
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
	var s3Stdin bool
	cmd.Flags().BoolVar(&s3Stdin, "s3-env-stdin", false, "read the S3 settings as KEY=VALUE lines (only "+strings.Join(backup.S3EnvKeys, ", ")+
		") from stdin, not from the environment: how 'mltrain fleet backup' passes its keys")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		dest, err := backup.ParseTarget(args[0])
		if err != nil {
			return clierr.Usage(err, cmd.CommandPath())
		}
		o := backup.Options{}
		if s3Stdin {
			if dest.File != "" {
				return clierr.Usage(fmt.Errorf("--s3-env-stdin reads S3 settings, but %s is a file", args[0]), cmd.CommandPath())
			}
			s, err := backup.ReadS3Env(cmd.InOrStdin())
			if err != nil {
				return clierr.Usage(err, cmd.CommandPath())
			}
			o.S3 = &s
		}
		res, err := a.backup(cmd, dest, o)
		if err != nil {
			if a.json {
				// As verify --json: a tool ('mltrain fleet backup') reads
				// stdout, and an object says why there is no result.
				_ = printJSON(a.out, verify.NewFailure(err, a.commands(cmd, nil).Hint(err)))
			}
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

func (a *app) backup(cmd *cobra.Command, dest backup.Target, o backup.Options) (backup.Result, error) {
	l, err := backup.Open(a.StateDir())
	if err != nil {
		return backup.Result{}, err
	}
	rep, done := a.reporter()
	defer done()
	o.Reporter = rep
	return backup.Backup(cmd.Context(), l, dest, o)
}
