package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/fleet"
)

func (a *app) fleetBackupCmd() *cobra.Command {
	var o fleet.Options
	var htmlFile string
	cmd := &cobra.Command{
		Use:   "backup HOSTS s3://BUCKET/PREFIX",
		Short: "Run 'mltrain backup' on every host of a hosts file over SSH, each to its own folder of an S3 prefix",
		Long: `HOSTS is the hosts file of 'mltrain fleet verify': [user@]address[:port] [label].
Each host runs 'mltrain backup --s3-env-stdin s3://BUCKET/PREFIX/<label>/' (its
address when it has no label; other characters than letters, digits, '.', '_'
and '-' become '-'), with --project and --state-dir when given. The S3 settings
are this machine's (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, or AWS_PROFILE's keys, resolved here) and reach
each host on its SSH session's stdin, never in a command line; the endpoint must
be reachable from the hosts. Each host ends in one state: passed (its backup and
its manifest.json landed), failed, or ` + strings.Join(fleet.States[3:], ", ") + `.
The exit status is 0 only when every host passed. See docs/BACKUP.md.`,
		Example: "  mltrain fleet backup hosts.txt s3://course-backups/2026-11-29",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := backup.ParseTarget(args[1])
			if err == nil && dest.File != "" {
				_, err = fleet.BackupTargets(nil, dest)
			}
			if err != nil {
				return clierr.Usage(err, cmd.CommandPath())
			}
			hosts, done, err := a.fleetStart(cmd, args[0], &o)
			if err != nil {
				return err
			}
			rep, err := fleet.Backup(cmd.Context(), hosts, dest, o)
			done()
			if err != nil {
				return err
			}
			if htmlFile != "" {
				if err := writeReportFile("--html", htmlFile, rep.WriteHTML); err != nil {
					return err
				}
			}
			if a.json {
				err = printJSON(a.out, rep)
			} else {
				err = fleet.WriteBackupTable(a.out, rep, isTerminal(a.out))
			}
			if err == nil && htmlFile != "" {
				a.wrote("HTML report", htmlFile)
			}
			if err == nil && !rep.OK {
				err = clierr.Silent{Code: clierr.ExitFailure}
			}
			return err
		},
	}
	fl := cmd.Flags()
	sshFlags(fl, &o, 30*time.Minute)
	fl.StringVar(&htmlFile, "html", "", "also write one self-contained HTML page to `FILE`")
	return cmd
}
