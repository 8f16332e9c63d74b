package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/gpu"
)

func (a *app) gpusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List the host's GPUs (NVIDIA via NVML, AMD via KFD sysfs)",
		Long: `List the host's GPUs and what keeps any GPU hardware from being usable, with the fix.
Problems are part of the answer: the command exits 0 whenever detection ran.
--json prints the stable form {"gpus":[...],"problems":[...]} with the driver's versions
(nvidia_driver_version, cuda_driver_version, amdgpu_driver_version) where readable.
Set MLTRAIN_SYSFS_ROOT to read a fixture host (a directory standing for /).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := gpu.Detect(cmd.Context(), gpu.Options{})
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, rep)
			}
			return printGPUs(a, rep)
		},
	}
}

func printGPUs(a *app, rep gpu.Report) error {
	if len(rep.GPUs) == 0 {
		fmt.Fprintln(a.out, "No usable GPUs.")
	} else {
		tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "INDEX\tVENDOR\tNAME\tMEMORY\tPCI BUS ID\tUUID\tDEVICE")
		for _, g := range rep.GPUs {
			dev := g.RenderNode
			if dev == "" {
				dev = "-"
			}
			if g.MIG {
				dev += " (MIG on)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d MiB\t%s\t%s\t%s\n", g.Index, g.Vendor, g.Name, g.MemoryMiB, g.PCIBusID, g.UUID, dev)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, v := range []gpu.Vendor{gpu.NVIDIA, gpu.AMD} {
		if rep.Has(v) {
			fmt.Fprintln(a.out, rep.DriverSummary(v))
		}
	}
	if len(rep.Problems) > 0 {
		fmt.Fprintln(a.out, "\nProblems:")
		for _, p := range rep.Problems {
			fmt.Fprintf(a.out, "  %s: %s\n    fix: %s\n", p.Code, p.Message, p.FixWith(a.lab().Line))
		}
		fmt.Fprintf(a.out, "\nRun '%s' for the full readiness check.\n", a.lab().Line("doctor"))
	}
	return nil
}
