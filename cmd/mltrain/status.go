package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/lab"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show each service's state, each worker's GPU, and the URLs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer eng.Close()
			st, err := lab.GetStatus(cmd.Context(), eng, a.StateDir(), a.project)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, st)
			}
			if len(st.Services) == 0 {
				fmt.Fprint(a.out, a.next(fmt.Sprintf("Lab %q has no containers. Next: 'mltrain up'.\n", a.project)))
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVICE\tCONTAINER\tSTATE\tHEALTH\tGPU\tRAY")
			for _, s := range st.Services {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Service, s.Container, s.State, dash(s.Health), dash(s.GPU), dash(s.RayState))
			}
			tw.Flush()
			fmt.Fprint(a.out, a.next(fmt.Sprintf("\nRay: %s\n", st.Ray)))
			if u := st.URLs; u != nil {
				fmt.Fprintf(a.out, "Ray dashboard %s · Jupyter %s · Grafana %s · MinIO console %s\n", u.RayDashboard, u.Jupyter, u.Grafana, u.MinIOConsole)
			}
			return nil
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
