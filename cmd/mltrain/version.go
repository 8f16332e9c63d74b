package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/lab/plan"
)

// Set at build time (make build, GoReleaser): -ldflags "-X main.version=…
// -X main.commit=… -X main.date=…". A plain `go build` leaves them empty
// and buildInfo falls back to what Go stamped from the checkout.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is what `mltrain version` reports: enough to tell which build a
// student runs and whether it can see NVIDIA GPUs at all.
type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Date       string `json:"date"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	NVML       bool   `json:"nvml"`
	RayVersion string `json:"ray_version"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, NVML: nvmlCompiledIn, RayVersion: plan.DefaultRayVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

func (b buildInfo) write(w io.Writer) error {
	nvml := "compiled in (cgo)"
	if !b.NVML {
		nvml = "NOT compiled in: built without cgo, NVIDIA GPUs cannot be detected"
	}
	_, err := fmt.Fprintf(w, "mltrain %s\n  commit:  %s\n  built:   %s\n  go:      %s %s\n  nvml:    %s\n  ray:     %s (default --ray-version)\n",
		b.Version, b.Commit, b.Date, b.Go, b.Platform, nvml, b.RayVersion)
	return err
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print mltrain's version, commit, build date, Go, NVML support, default Ray",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json {
				return printJSON(a.out, currentBuild())
			}
			return currentBuild().write(a.out)
		},
	}
}

// versionFlag makes `mltrain --version` print what `mltrain version` does
// (cobra's flag prints a template: the text goes in as one quoted literal).
func versionFlag(root *cobra.Command) {
	var text strings.Builder
	_ = currentBuild().write(&text)
	root.Version = version
	root.SetVersionTemplate("{{" + strconv.Quote(text.String()) + "}}")
}
