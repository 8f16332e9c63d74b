package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

func (a *app) renderCmd() *cobra.Command {
	var gpusFrom, memory, out string
	var cpus, renderGID, videoGID int
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Write the lab's compose.yaml and generated config without starting anything",
		Long: `render plans the lab and writes compose.yaml, prometheus/ and grafana/ into the
state dir (or --out DIR), starting nothing. For a host you are not on, give its
GPUs (the output of 'mltrain gpus --json' there), CPUs, memory and address:

  mltrain render --gpus-from gpus.json --cpus 64 --memory 256g --host-ip 129.114.27.10 --out ./review

Credentials are generated once and kept in the output directory (0600).`,
		Args: cobra.NoArgs,
	}
	lf := addLabFlags(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&gpusFrom, "gpus-from", "", "plan for the GPUs in this 'mltrain gpus --json' file instead of this host's")
	fl.IntVar(&cpus, "cpus", 0, "the host's CPU count (required with --gpus-from)")
	fl.StringVar(&memory, "memory", "", "the host's memory, e.g. 256g (required with --gpus-from)")
	fl.IntVar(&renderGID, "render-gid", 0, "with --gpus-from on AMD: the host's render group id")
	fl.IntVar(&videoGID, "video-gid", 0, "with --gpus-from on AMD: the host's video group id")
	fl.StringVar(&out, "out", "", "directory to write to (default: the state dir)")

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		dir := a.StateDir()
		if out != "" {
			dir = state.Dir(out)
		}
		ch, changes, err := lf.choices(a.project, cmd.Flags(), dir)
		if err != nil {
			return err
		}
		facts, err := plan.FactsFrom{GPUsFrom: gpusFrom, CPUs: cpus, Memory: memory, RenderGID: renderGID, VideoGID: videoGID,
			HostIP: ch.HostIP, NodeIP: ch.NodeIP}.Facts(cmd.Context())
		if err != nil {
			return err
		}
		rendered, p, err := lifecycle.Render(cmd.Context(), dir, facts, ch.Options)
		if err != nil {
			return err
		}
		rep, done := a.reporter()
		for _, c := range changes {
			progress.Note(rep, "changed: "+c)
		}
		for _, w := range p.Warnings {
			progress.Warning(rep, w)
		}
		done()
		if a.json {
			return printJSON(a.out, map[string]any{"dir": dir, "files": rendered.Files, "plan": p})
		}
		return printRender(a, dir, rendered.Files, p)
	}
	return cmd
}

func printRender(a *app, dir state.Dir, files []string, p plan.Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Lab %q: %s mode, %d worker(s)\n", p.Project, p.Mode, len(p.Workers))
	fmt.Fprintf(&b, "  %-14s %d CPUs, shm %s\n", p.Head.Container, p.Head.CPUs, progress.Bytes(p.Head.ShmBytes))
	for _, w := range p.Workers {
		dev := "no GPU (CPU rehearsal, 1 logical GPU)"
		if g := w.GPU; g != nil {
			dev = fmt.Sprintf("GPU %d %s %s", g.Index, g.Name, g.UUID)
			if g.RenderNode != "" {
				dev += " " + g.RenderNode
			}
			if w.SharedGPU {
				dev += " (shared)"
			}
		}
		fmt.Fprintf(&b, "  %-14s %d CPUs, shm %s, %s\n", w.Container, w.CPUs, progress.Bytes(w.ShmBytes), dev)
	}
	fmt.Fprintf(&b, "Wrote to %s:\n", dir)
	for _, f := range files {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	fmt.Fprintf(&b, "Review: docker compose -f %s config\n", dir.File(compose.ComposeFile))
	_, err := fmt.Fprint(a.out, b.String())
	return err
}
