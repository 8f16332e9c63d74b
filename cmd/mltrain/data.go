package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) dataCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "data food11",
		Short: "Prepare the Food-11 dataset volume",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #6")
		},
	}
}
