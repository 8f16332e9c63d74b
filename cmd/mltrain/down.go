package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

func (a *app) downCmd() *cobra.Command {
	var volumes, yes, noWait bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop and remove the lab's containers and network (volumes are kept)",
		Long: `down stops the lab's containers gracefully (Ray gets SIGTERM and time to leave
the cluster) and removes them and the lab's network. MinIO data, Grafana and
Prometheus volumes are kept unless --volumes; the dataset volume (food11) is
never removed by down.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&volumes, "volumes", false, "also remove the lab's volumes (MinIO checkpoints, Grafana, Prometheus)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask before removing volumes")
	addNoWait(cmd.Flags(), &noWait, "")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if volumes && !yes {
			fmt.Fprintf(a.errOut, "Remove lab %q's volumes, including every MinIO checkpoint? [y/N] ", a.project)
			line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
				return clierr.Hintf(fmt.Sprintf("run '%s' to keep the volumes, or '%s'", a.lab().Line("down"), a.lab().Line("down", "--volumes", "--yes")),
					"not confirmed: nothing removed")
			}
		}
		w, err := a.write(cmd, nil, noWait, true)
		if err != nil {
			return err
		}
		defer w.release()
		removed, err := lifecycle.Down(cmd.Context(), w.eng, a.project, volumes, w.rep)
		w.progressDone()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, map[string]any{"removed": removed, "volumes_removed": volumes})
		}
		if len(removed) == 0 {
			fmt.Fprintf(a.out, "Lab %q has no containers.\n", a.project)
			return nil
		}
		fmt.Fprintf(a.out, "Removed %d containers of lab %q.", len(removed), a.project)
		if !volumes {
			fmt.Fprintf(a.out, " Volumes kept ('%s' removes them).", a.lab().Line("down", "--volumes"))
		}
		fmt.Fprintln(a.out)
		return nil
	}
	return cmd
}
