package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) verifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Verify every lab step with evidence (table, --json, --junit)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #8")
		},
	}
}
