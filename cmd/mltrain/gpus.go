package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
)

func (a *app) gpusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gpus",
		Short: "List the host's GPUs (NVIDIA via NVML, AMD via KFD sysfs)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clierr.NotBuilt(cmd.Name(), "issue #2")
		},
	}
}
