package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/lab/service"
)

func (a *app) doctorCmd() *cobra.Command {
	var hostIP string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that this host is ready for the lab, with the fix for each problem",
		Long: `Check the Docker engine, the GPU drivers and their container plumbing (NVIDIA runtime or
CDI; /dev/kfd and render nodes for AMD), the driver's version against the CUDA or ROCm the
worker image carries, the GPU count, the lab's ports (8265, 3000, 8888, 9001), free disk in
Docker's root, the address browsers will use, and the lab's images: each is on this host
or its registry answers (once per registry, within 5s), as 'up' needs to pull it.
Each row is pass, warn or fail with its fix; the exit status is 1 when any row fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			deps := doctor.System(a.connect, host.Options{HostIP: hostIP})
			res := doctor.Run(cmd.Context(), deps, doctor.Options{Project: a.project, Driver: dockerfiles.DriverNeed(), Images: a.labImages})
			for i, c := range res.Checks {
				res.Checks[i].Fix = c.FixWith(a.lab().Line) // the commands act on this lab
			}
			if a.json {
				if err := printJSON(a.out, res); err != nil {
					return err
				}
			} else if err := printDoctor(a, res); err != nil {
				return err
			}
			if !res.OK {
				return clierr.Silent{Code: clierr.ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&hostIP, "host-ip", "", "the address students' browsers use (default: cloud metadata, else the default-route interface)")
	return cmd
}

// labImages are the images up would ensure: the lab's planned ones when
// it has a plan, else the defaults for a host with vendor's GPUs.
func (a *app) labImages(vendor gpu.Vendor) (images.Request, error) {
	if st, err := a.StateDir().State(); err == nil && len(st.Plan.Images) > 0 {
		refs := slices.Sorted(maps.Values(st.Plan.Images))
		return dockerfiles.Request(st.Plan.RayVersion, refs)
	}
	var refs []string
	for _, role := range service.Roles() {
		ref, err := service.DefaultImage(role, dockerfiles.DefaultRayVersion, vendor)
		if err != nil {
			return images.Request{}, err
		}
		refs = append(refs, ref)
	}
	return dockerfiles.Request(dockerfiles.DefaultRayVersion, refs)
}

func printDoctor(a *app, res doctor.Result) error {
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tDETAIL")
	count := map[doctor.Status]int{}
	for _, c := range res.Checks {
		count[c.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(string(c.Status)), c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "ready"
	if count[doctor.Warn] > 0 {
		verdict = "ready, but read the WARN rows"
	}
	if !res.OK {
		verdict = "not ready: fix the FAIL rows"
	}
	warnings := "warnings"
	if count[doctor.Warn] == 1 {
		warnings = "warning"
	}
	_, err := fmt.Fprintf(a.out, "\n%d passed, %d %s, %d failed: %s\n", count[doctor.Pass], count[doctor.Warn], warnings, count[doctor.Fail], verdict)
	return err
}
