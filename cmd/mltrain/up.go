package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/workspace"
)

func (a *app) upCmd() *cobra.Command {
	var pull, leaseEnd string
	var rebuild, noRollback, noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring the whole lab up and wait until it is proven ready",
		Long: `up detects this host, plans the lab, writes compose.yaml to the state dir,
pulls and builds the images, starts every service (unchanged ones are left
alone: a second up is a no-op), waits until Ray reports the head and every
worker ALIVE with its GPU, every service answers and every container is
healthy (what 'mltrain verify' checks next), creates the MinIO bucket
"ray", and prints the URLs with their credentials. One command changes a lab
at a time: while another up, down, join or worker runs on it, up waits
(--no-wait: fails at once).

Every role's image can be replaced (tests and offline nodes): --image-head,
--image-worker, --image-jupyter, --image-minio, --image-prometheus,
--image-grafana. Host ports: --port NAME=PORT.`,
		Args: cobra.NoArgs,
	}
	lf := addLabFlags(cmd.Flags())
	fl := cmd.Flags()
	pullFlag(fl, &pull, "when to pull external images: missing, always, never")
	fl.BoolVar(&rebuild, "rebuild", false, "rebuild mltrain's images even when their content hash is unchanged")
	fl.BoolVar(&noRollback, "no-rollback", false, "keep the containers of a failed first up for inspection")
	fl.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for the lab to be ready")
	fl.StringVar(&leaseEnd, "lease-end", "", "when the node's lease ends: RFC 3339 (2026-11-29T17:00:00Z) or from now ("+leaseExample+"); kept by re-ups (see 'mltrain lease')")
	data := addDataFlags(fl)
	addNoWait(fl, &noWait, "")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if cmd.Flags().Changed("lease-end") {
			end, err := a.parseLeaseEnd(leaseEnd, a.commands(cmd, nil).AgainWith("--lease-end", leaseExample))
			if err != nil {
				return fmt.Errorf("--lease-end: %w", err)
			}
			lf.leaseEnd = end
		}
		ch, changes, err := lf.choices(a.project, cmd.Flags(), a.StateDir())
		if err != nil {
			return err
		}
		policy, err := images.ParsePullPolicy(pull)
		if err != nil {
			return err
		}
		load, err := data.load(cmd)
		if err != nil {
			return err
		}
		w, err := a.write(cmd, nil, noWait, true)
		if err != nil {
			return err
		}
		defer w.release()
		for _, c := range changes {
			progress.Note(w.rep, "changed: "+c)
		}
		res, err := lifecycle.Up(ctx, lifecycle.UpDeps{
			Engine: w.eng, Reporter: w.rep,
			Detect: func(ctx context.Context) (host.Facts, error) {
				return host.Detect(ctx, host.Options{HostIP: ch.HostIP, NodeIP: ch.NodeIP})
			},
			PopulateWorkspace: func(dir string) error { _, err := workspace.Ensure(dir); return err },
		}, lifecycle.UpOptions{
			StateDir: a.StateDir(), Lab: ch.Options, HostIP: ch.HostIP, NodeIP: ch.NodeIP, Images: images.Options{Pull: policy, Rebuild: rebuild},
			Timeout: timeout, NoRollback: noRollback, Data: load, Commands: a.commands(cmd, nil), LeaseEnd: ch.LeaseEnd,
		})
		w.progressDone()
		if err != nil {
			return a.dataHint(err, cmd)
		}
		if a.json {
			return printJSON(a.out, res)
		}
		a.printUp(res)
		return nil
	}
	return cmd
}

// printUp says the lab is ready and where. The credentials are printed by
// the up that first completes the lab; later ups name 'mltrain
// credentials' instead, so a re-run's output (often pasted into chats and
// tickets) holds no secret. The next steps are the ones still to do.
func (a *app) printUp(r lifecycle.Result) {
	var b strings.Builder
	p, c := r.Plan, a.lab()
	fmt.Fprintf(&b, "\nLab %q is ready (%s mode, %d workers", p.Project, p.Mode, len(p.Workers))
	if n := len(r.Apply.Created) + len(r.Apply.Recreated) + len(r.Apply.Started); n == 0 {
		fmt.Fprint(&b, "; nothing changed")
	}
	fmt.Fprint(&b, ").\n\n")
	writeURLs(&b, r.URLs)
	file := r.StateDir.File(state.CredentialsFile)
	if r.CredentialsCreated || r.FirstReady {
		fmt.Fprintf(&b, "\nThe lab's credentials, shown by the up that first completes it ('%s' shows them again):\n", c.Line("credentials"))
		writeCredentials(&b, r.URLs, r.Credentials)
		fmt.Fprintf(&b, "They are kept in %s (mode 0600).\n", file)
	} else {
		fmt.Fprintf(&b, "\nCredentials: '%s' (kept in %s, mode 0600).\n", c.Line("credentials"), file)
	}
	if p.Network == plan.NetworkHost {
		fmt.Fprintf(&b, "\nOther hosts may join: '%s' prints the line to run there. Ray's nodes talk on many ports both ways:\n"+
			"allow all TCP between this host (%s) and each joining host, and nothing else from outside.\n", c.Line("join-token"), p.NodeIP)
	}
	if r.HasData {
		fmt.Fprintf(&b, "Next: '%s'.\n", c.Line("lab", "guide"))
	} else {
		data := []string{"data", "food11"}
		if p.DataVolume != plan.DefaultDataVolume {
			data = append(data, "--volume", p.DataVolume)
		}
		fmt.Fprintf(&b, "Next: '%s' (the dataset volume %s is empty), then '%s'.\n", c.Line(data...), p.DataVolume, c.Line("lab", "guide"))
	}
	fmt.Fprint(a.out, b.String())
}
