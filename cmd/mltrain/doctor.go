package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check that this host is ready for the lab, with the fix for each problem",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #2")
		},
	}
}
