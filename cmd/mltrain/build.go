package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) buildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "build",
		Short: "Build the worker and Jupyter images this host needs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #5")
		},
	}
}
