package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

func (a *app) joinTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "join-token",
		Short: "Print the line that adds another host's GPUs to this lab (a secret)",
		Long: `join-token prints one line to paste on another host, "echo '<bundle>' | mltrain join -":
the bundle carries the head's address and ports, the lab's Ray token and MinIO's
bucket-limited user, and the Ray version and worker image to match. The line hands
the bundle to join on its stdin through the shell's own echo, so no process on that
host has it in its command line (ps, /proc/PID/cmdline); or save the bundle in a file
only you may read and run 'mltrain join --bundle-file FILE'. Treat it as a password.
The lab must have been brought up with 'mltrain up --allow-join'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := a.StateDir().MakeJoinBundle()
			if err != nil {
				return err
			}
			line := joinLine(b)
			if a.json {
				return printJSON(a.out, map[string]string{"command": line, "bundle": b.Encode(), "head": b.GCSAddress()})
			}
			fmt.Fprintln(a.errOut, "Run this on the other host; it holds the lab's secrets: do not paste it in a public channel. "+
				"It gives join the bundle on stdin, out of ps (a space before it keeps it out of bash's history where HISTCONTROL ignores spaces); "+
				"or save the bundle in a file only you may read and run 'mltrain join --bundle-file FILE':")
			_, err = fmt.Fprintln(a.out, line)
			return err
		},
	}
}

func (a *app) joinCmd() *cobra.Command {
	var o lifecycle.JoinRunOptions
	var hostIP, nodeIP, shm, pull, memory, gpusFrom string
	var cpus int
	var timeout time.Duration
	var noWait bool
	cmd := &cobra.Command{
		Use:   "join [- | BUNDLE]",
		Short: "Add this host's GPUs to a lab on another host",
		Long: `join adds this host's GPUs to the lab whose first host printed its join line
('mltrain join-token' there): one worker per GPU, pinned by UUID or render node as 'up'
does (--share-gpu on a one-GPU host), on the host network at this host's address. Before
starting anything it proves this host reaches the head's ports and MinIO, that the head
takes the bundle's token and that the worker image runs the lab's Ray and Python; then it
waits until the head lists this host's nodes ALIVE with their GPUs. A second join changes
nothing; 'mltrain down' here removes only these workers. --render-only --out DIR writes
compose.yaml and starts nothing.

` + joinHelp,
		Args:        cobra.MaximumNArgs(1),
		Annotations: map[string]string{rerunWith: "BUNDLE"},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Join.Workers, "workers", 0, "number of workers (default: one per GPU)")
	fl.BoolVar(&o.Join.ShareGPU, "share-gpu", false, "on a host with one GPU, run two workers on it")
	fl.BoolVar(&o.Join.AllowCPU, "allow-cpu", false, "join a host without GPUs as CPU rehearsal workers")
	fl.IntVar(&o.Join.WorkerCPUs, "worker-cpus", 0, "CPUs each worker advertises (default: the host's split across workers)")
	fl.StringVar(&shm, "shm-size", "", "shared memory per worker, e.g. 12g")
	fl.StringVar(&o.Join.DataVolume, "data-volume", plan.DefaultDataVolume, "this host's Docker volume holding Food-11")
	fl.StringVar(&o.Join.WorkerImage, "image-worker", "", "worker image to run instead of building mltrain's (e.g. one 'mltrain images load' brought)")
	fl.StringVar(&hostIP, "host-ip", "", "this host's public address (default: detected)")
	fl.StringVar(&nodeIP, "node-ip", "", "this host's address on the network the lab's hosts share (default: the default-route interface's)")
	fl.StringVar(&gpusFrom, "gpus-from", "", "with --render-only: plan for the GPUs in this 'mltrain gpus --json' file")
	fl.IntVar(&cpus, "cpus", 0, "with --gpus-from: the host's CPU count")
	fl.StringVar(&memory, "memory", "", "with --gpus-from: the host's memory, e.g. 256g")
	pullFlag(fl, &pull, "when to pull base images: missing, always, never")
	fl.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for this host's nodes to join")
	fl.BoolVar(&o.NoRollback, "no-rollback", false, "keep the containers of a failed first join for inspection")
	fl.BoolVar(&o.RenderOnly, "render-only", false, "write compose.yaml into --out (or the state dir) and start nothing")
	addNoWait(fl, &noWait, "")
	var out, bundleFile string
	fl.StringVar(&out, "out", "", "with --render-only: the directory to write to")
	fl.StringVar(&bundleFile, "bundle-file", "", "read the join bundle from this file (mode 0600, not a symbolic link): out of ps, unlike an argument")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		b, err := a.joinBundle(cmd, args, bundleFile)
		if err != nil {
			return err
		}
		if !cmd.Flags().Changed("project") {
			a.project = b.Lab // on its own host a joining lab keeps the lab's name
		}
		o.Bundle, o.Join.Project, o.Timeout = b, a.project, timeout
		o.StateDir = a.StateDir()
		o.Commands = a.commands(cmd, args)
		if out != "" {
			if !o.RenderOnly {
				return clierr.WithCode(clierr.Hintf("add --render-only, or drop --out", "--out writes files only with --render-only"), clierr.ExitUsage)
			}
			o.StateDir = state.Dir(out)
		}
		if shm != "" {
			if o.Join.WorkerShm, err = plan.ParseSize("--shm-size", shm); err != nil {
				return err
			}
		}
		if o.Images.Pull, err = images.ParsePullPolicy(pull); err != nil {
			return err
		}
		if gpusFrom != "" && !o.RenderOnly {
			return clierr.WithCode(clierr.Hintf("add --render-only: a join starts workers for this host's own GPUs", "--gpus-from plans for another host"), clierr.ExitUsage)
		}
		w, err := a.write(cmd, args, noWait, !o.RenderOnly)
		if err != nil {
			return err
		}
		defer w.release()
		res, err := lifecycle.Join(ctx, lifecycle.UpDeps{Engine: w.eng, Reporter: w.rep,
			Detect: plan.FactsFrom{GPUsFrom: gpusFrom, CPUs: cpus, Memory: memory, HostIP: hostIP, NodeIP: nodeIP, FindNodeIP: true}.Facts}, o)
		w.progressDone()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		a.printJoin(res, b)
		return nil
	}
	return cmd
}

func (a *app) printJoin(r lifecycle.Result, b plan.JoinBundle) {
	var s strings.Builder
	p := r.Plan
	if len(r.Files) > 0 {
		fmt.Fprintf(&s, "Wrote %s to %s; nothing started.\n", strings.Join(r.Files, ", "), r.StateDir)
		fmt.Fprint(a.out, s.String())
		return
	}
	fmt.Fprintf(&s, "\nThis host (%s) joined lab %q at %s: %d worker(s), %s mode", p.NodeIP, b.Lab, b.GCSAddress(), len(p.Workers), p.Mode)
	if len(r.Apply.Created)+len(r.Apply.Recreated)+len(r.Apply.Started) == 0 {
		fmt.Fprint(&s, "; nothing changed")
	}
	fmt.Fprint(&s, ".\n")
	for _, n := range r.Nodes {
		fmt.Fprintf(&s, "  node %s  %s  %g GPU  %s\n", n.NodeID, n.NodeIP, n.GPUs(), n.State)
	}
	if !r.HasData {
		fmt.Fprintf(&s, "The dataset is not on this host yet: '%s' here before training.\n", a.lab().Line("data", "food11"))
	}
	fmt.Fprintf(&s, "Ray dashboard (on the first host): %s\n", b.DashboardURL())
	fmt.Fprintf(&s, "Next: '%s' here or on the first host; '%s' here removes only these workers.\n", a.lab().Line("status"), a.lab().Line("down"))
	fmt.Fprint(a.out, s.String())
}
