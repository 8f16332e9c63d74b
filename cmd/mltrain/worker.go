package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker stop|start N",
		Short: "Stop or start one Ray worker (fault-tolerance exercise)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #4")
		},
	}
}
