package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) renderCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "render",
		Short: "Write the lab's compose.yaml and generated config without starting anything",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #3")
		},
	}
}
