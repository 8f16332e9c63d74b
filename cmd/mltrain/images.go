package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

func (a *app) imagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Save or load the lab's images (preload nodes without a registry)",
		Long: `Move the lab's images between nodes without a registry:

  mltrain images save lab-images.tar     # on a node that has them
  mltrain images load lab-images.tar     # on the node that needs them

The archive is the 'docker save' format, so 'docker load -i' reads it too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.imagesSaveCmd(), a.imagesLoadCmd())
	return cmd
}

func (a *app) imagesSaveCmd() *cobra.Command {
	var rayVersion string
	cmd := &cobra.Command{
		Use:   "save FILE [IMAGE...]",
		Short: "Write every lab image present on this host (and any IMAGE given) into FILE",
		Long: `save writes into one archive every image of the lab that is on this host:
mltrain's builds (CUDA and ROCm workers, Jupyter), their base images, and the
pinned images of the head, MinIO, Prometheus and Grafana; plus any IMAGE named.
Images not on this host are listed and left out.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return clierr.WithCode(clierr.Hintf("mltrain images save lab-images.tar",
					"images save needs the FILE to write"), clierr.ExitUsage)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rayVersion, "ray-version", dockerfiles.DefaultRayVersion, "Ray version of the lab whose images to save")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := plan.CheckRayVersion(rayVersion); err != nil {
			return err
		}
		refs, err := saveCandidates(rayVersion, args[1:])
		if err != nil {
			return err
		}
		eng, err := a.connect(cmd.Context())
		if err != nil {
			return err
		}
		defer eng.Close()
		rep, done := a.reporter()
		res, err := images.Save(cmd.Context(), eng, refs, args[0], rep)
		done()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		fmt.Fprintf(a.out, "Saved %d images (%s) to %s:\n", len(res.Saved), humanize.IBytes(uint64(res.Bytes)), res.File)
		for _, r := range res.Saved {
			fmt.Fprintf(a.out, "  %s\n", r)
		}
		if len(res.Missing) > 0 {
			fmt.Fprintln(a.out, "Not on this host, left out:")
			for _, r := range res.Missing {
				fmt.Fprintf(a.out, "  %s\n", r)
			}
		}
		fmt.Fprintf(a.out, "On the other node: mltrain images load %s\n", res.File)
		return nil
	}
	return cmd
}

// saveCandidates is every image a lab of rayVersion may run, for either
// vendor: the plan's defaults (service.DefaultImage), mltrain's builds and their
// bases, and the extra images named on the command line.
func saveCandidates(rayVersion string, extra []string) ([]string, error) {
	var planned []string
	for _, role := range service.Roles() {
		for _, v := range []gpu.Vendor{gpu.NVIDIA, gpu.AMD} {
			ref, err := service.DefaultImage(role, rayVersion, v)
			if err != nil {
				return nil, err
			}
			planned = append(planned, ref)
		}
	}
	return dockerfiles.SaveRefs(rayVersion, append(planned, extra...))
}

func (a *app) imagesLoadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "load FILE",
		Short: "Load the images of an archive made by 'mltrain images save' (or docker save)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return clierr.WithCode(clierr.Hintf("mltrain images load lab-images.tar",
					"images load needs exactly one FILE"), clierr.ExitUsage)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer eng.Close()
			rep, done := a.reporter()
			tags, err := images.Load(cmd.Context(), eng, args[0], rep)
			done()
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.out, map[string]any{"file": args[0], "loaded": tags})
			}
			fmt.Fprintf(a.out, "Loaded %d images from %s:\n", len(tags), args[0])
			for _, t := range tags {
				fmt.Fprintf(a.out, "  %s\n", t)
			}
			return nil
		},
	}
}
