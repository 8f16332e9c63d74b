package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/workspace"
)

func (a *app) upCmd() *cobra.Command {
	var pull string
	var rebuild, noRollback bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring the whole lab up and wait until it is proven ready",
		Long: `up detects this host, plans the lab, writes compose.yaml to the state dir,
pulls and builds the images, starts every service (unchanged ones are left
alone: a second up is a no-op), waits until Ray reports the head and every
worker ALIVE with its GPU and every service answers, creates the MinIO bucket
"ray", and prints the URLs with their credentials.

Every role's image can be replaced (tests and offline nodes): --image-head,
--image-worker, --image-jupyter, --image-minio, --image-prometheus,
--image-grafana. Host ports: --port NAME=PORT.`,
		Args: cobra.NoArgs,
	}
	lf := addLabFlags(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&pull, "pull", string(images.PullMissing), "when to pull external images: missing, always, never")
	fl.BoolVar(&rebuild, "rebuild", false, "rebuild mltrain's images even when their content hash is unchanged")
	fl.BoolVar(&noRollback, "no-rollback", false, "keep the containers of a failed first up for inspection")
	fl.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for the lab to be ready")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		opts, err := lf.options(a.project)
		if err != nil {
			return err
		}
		policy, err := images.ParsePullPolicy(pull)
		if err != nil {
			return err
		}
		eng, err := a.connect(ctx)
		if err != nil {
			return err
		}
		defer eng.Close()
		rep, done := a.reporter()
		res, err := lab.Up(ctx, lab.UpDeps{
			Engine: eng, Reporter: rep,
			Detect: func(ctx context.Context) (host.Facts, error) {
				return host.Detect(ctx, host.Options{HostIP: lf.hostIP})
			},
			PopulateWorkspace: func(dir string) error { _, err := workspace.Ensure(dir); return err },
		}, lab.UpOptions{
			StateDir: a.StateDir(), Lab: opts, Images: images.Options{Pull: policy, Rebuild: rebuild},
			Timeout: timeout, NoRollback: noRollback,
		})
		done()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		printUp(a.out, res)
		return nil
	}
	return cmd
}

func printUp(w io.Writer, r lab.UpResult) {
	p := r.Plan
	fmt.Fprintf(w, "\nLab %q is ready (%s mode, %d workers", p.Project, p.Mode, len(p.Workers))
	if n := len(r.Apply.Created) + len(r.Apply.Recreated) + len(r.Apply.Started); n == 0 {
		fmt.Fprint(w, "; nothing changed")
	}
	fmt.Fprint(w, ").\n\n")
	c := r.Credentials
	fmt.Fprintf(w, "  Ray dashboard   %s\n", r.URLs.RayDashboard)
	fmt.Fprintf(w, "                  token: %s\n", c.RayAuthToken)
	fmt.Fprintf(w, "  Jupyter         %s?token=%s\n", r.URLs.Jupyter, c.JupyterToken)
	fmt.Fprintf(w, "  Grafana         %s  (anonymous viewer; admin / %s)\n", r.URLs.Grafana, c.GrafanaAdminPassword)
	fmt.Fprintf(w, "  MinIO console   %s  (%s / %s)\n", r.URLs.MinIOConsole, c.MinIOAccessKey, c.MinIOSecretKey)
	fmt.Fprintf(w, "\nCredentials are kept in %s (mode 0600).\n", r.StateDir.File(lab.CredentialsFile))
	fmt.Fprintln(w, "Next: 'mltrain data food11' (if not done), then 'mltrain lab guide'.")
}
