package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/plan"
)

func (a *app) buildCmd() *cobra.Command {
	var vendor, pull, rayVersion string
	var rebuild bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the worker and Jupyter images this host needs",
		Long: `build makes mltrain's own images: the Ray worker for this host's GPUs (CUDA on
NVIDIA and in CPU rehearsal, ROCm on AMD) and Jupyter with Ray. Images are tagged
mltrain/<name>:<ray version>-<content hash> and are not rebuilt while the
Dockerfile is unchanged (--rebuild forces it). Base images are pulled first
(--pull missing|always|never); on a node without a registry, preload them with
'mltrain images load FILE'.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	vendorFlag(fl, &vendor, "GPU vendor to build the worker for: auto (detect), nvidia, amd, cpu")
	pullFlag(fl, &pull, "when to pull base images: missing, always, never")
	fl.StringVar(&rayVersion, "ray-version", dockerfiles.DefaultRayVersion, "Ray version to build for")
	fl.BoolVar(&rebuild, "rebuild", false, "build even when an image with the same content hash exists")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		policy, err := images.ParsePullPolicy(pull)
		if err != nil {
			return clierr.WithCode(err, clierr.ExitUsage)
		}
		if err := plan.CheckRayVersion(rayVersion); err != nil {
			return err
		}
		v, err := buildVendor(ctx, vendor, a.lab().Line("doctor"))
		if err != nil {
			return err
		}
		specs, err := dockerfiles.Specs(v, rayVersion)
		if err != nil {
			return err
		}
		eng, err := a.connect(ctx)
		if err != nil {
			return err
		}
		defer eng.Close()
		rep, done := a.reporter()
		if v == "" {
			progress.Note(rep, "no GPU: building the CUDA worker, which CPU rehearsal runs (its PyTorch runs on CPU)")
		}
		res, err := images.Ensure(ctx, eng, images.Request{Build: specs}, images.Options{Pull: policy, Rebuild: rebuild}, rep)
		done()
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, res)
		}
		for _, r := range res.Built {
			fmt.Fprintf(a.out, "built      %s\n", r)
		}
		for _, r := range res.UpToDate {
			fmt.Fprintf(a.out, "up to date %s\n", r)
		}
		return nil
	}
	return cmd
}

// buildVendor turns --vendor into the gpu.Vendor string dockerfiles.Specs
// takes ("" for CPU). auto detects; GPU hardware that detection cannot use
// is an error rather than a silent CPU build.
func buildVendor(ctx context.Context, flag, doctor string) (string, error) {
	switch flag {
	case "nvidia", "amd":
		return flag, nil
	case "cpu":
		return "", nil
	case "auto", "":
	default:
		return "", clierr.WithCode(clierr.Hintf("use --vendor auto, nvidia, amd or cpu",
			"--vendor %q is not a GPU vendor (auto, nvidia, amd, cpu)", flag), clierr.ExitUsage)
	}
	rep, err := gpu.Detect(ctx, gpu.Options{})
	if err != nil {
		return "", err
	}
	if v := rep.Vendor(); v != "" {
		return string(v), nil
	}
	if rep.HardwareWithoutDriver() {
		msg := "GPU hardware is present but not usable"
		for _, p := range rep.Problems {
			msg += "; " + p.Message
		}
		return "", clierr.Hintf("fix the GPU setup ('"+doctor+"' shows how), or pick the image yourself: mltrain build --vendor nvidia|amd|cpu",
			"%s, so the worker image to build is unknown", msg)
	}
	return "", nil
}
