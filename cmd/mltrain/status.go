package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show each service's state, each worker's GPU and Ray node, and the URLs",
		Long: `Show each service's container state and health, each worker's GPU and the
state of its Ray node, and the URLs. Where a worker's container and Ray
disagree (Ray lists a stopped worker's node ALIVE until its health checks
time out) a note says so. Exits 1 when a service the lab plans is not
running, whatever its container's state (none, created, exited, paused).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer eng.Close()
			st, err := status.Get(cmd.Context(), eng, a.lab())
			if err != nil {
				return err
			}
			st.Lease = plan.LeaseAt(a.StateDir().LeaseEnd(), a.now())
			if a.json {
				if err := printJSON(a.out, st); err != nil {
					return err
				}
				return st.Err()
			}
			if len(st.Services) == 0 && len(st.Missing) == 0 {
				fmt.Fprintf(a.out, "Lab %q has no containers. Next: '%s'.\n", a.project, a.lab().Line("up"))
				printLeaseLeft(a, st)
				for _, n := range st.Notes {
					fmt.Fprintf(a.out, "Note: %s\n", n)
				}
				return st.Err() // an unreadable state.json is an error, even with no container
			}
			printStatus(a, st)
			if err := st.Err(); err != nil {
				return err
			}
			if len(st.Next) > 0 {
				fmt.Fprint(a.out, "Next: "+strings.Join(st.Next, "; ")+"\n")
			}
			return nil
		},
	}
}

func printStatus(a *app, st status.Status) {
	tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tCONTAINER\tSTATE\tHEALTH\tGPU\tRAY")
	for _, s := range st.Services {
		ray := dash(s.RayState)
		if s.RayStale {
			ray += " (container down, Ray has not noticed yet)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Service, s.Container, s.State, dash(s.Health), dash(s.GPU), ray)
	}
	for _, m := range st.Missing {
		fmt.Fprintf(tw, "%s\t-\tmissing\t-\t-\t-\n", m)
	}
	tw.Flush()
	if j := st.Joined; j != nil {
		fmt.Fprintf(a.out, "\nThis host's workers joined lab %q: head %s:%d, dashboard http://%s:%d\n", j.Lab, j.HeadIP, j.GCSPort, j.HeadIP, j.Dashboard)
	}
	if len(st.Remote) > 0 && st.Joined == nil {
		fmt.Fprintln(a.out, "\nNodes on other hosts (joined with 'mltrain join'):")
		tw = tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "HOST\tSERVICE THERE\tGPU\tRAY\tNODE")
		for _, n := range st.Remote {
			fmt.Fprintf(tw, "%s\t%s\t%g\t%s\t%s\n", n.Host, dash(n.Service), n.GPUs, n.State, n.NodeID)
		}
		tw.Flush()
	}
	fmt.Fprintf(a.out, "\nRay: %s\n", st.Ray)
	printLeaseLeft(a, st)
	for _, n := range st.Notes {
		fmt.Fprintf(a.out, "Note: %s\n", n)
	}
	var pages []string
	for _, pg := range service.Pages() {
		if u := st.URLs[pg.Key]; u != "" {
			pages = append(pages, pg.Title+" "+u)
		}
	}
	if len(pages) > 0 {
		fmt.Fprintln(a.out, strings.Join(pages, " · "))
	}
}

// printLeaseLeft says the time left on the node's lease, when known.
func printLeaseLeft(a *app, st status.Status) {
	if l := st.Lease; l != nil {
		fmt.Fprintf(a.out, "Lease: %s; back up before it: '%s'\n", l.Left, a.backupLine())
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
