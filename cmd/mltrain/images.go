package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) imagesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "images",
		Short: "Save or load the lab's images (preload nodes without a registry)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #5")
		},
	}
}
