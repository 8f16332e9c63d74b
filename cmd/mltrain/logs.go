package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) logsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logs [SERVICE]",
		Short: "Show a service's logs",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #4")
		},
	}
}
