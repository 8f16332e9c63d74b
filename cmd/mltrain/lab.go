package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) labCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "lab EXERCISE",
		Short: "Run a scripted lab exercise and report what happened",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #7")
		},
	}
}
