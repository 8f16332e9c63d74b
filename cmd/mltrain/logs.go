package main

import (
	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/lab/lifecycle"
)

func (a *app) logsCmd() *cobra.Command {
	var follow bool
	var tail string
	cmd := &cobra.Command{
		Use:   "logs [SERVICE]",
		Short: "Show a service's logs (all services when none is named)",
		Args:  cobra.MaximumNArgs(1),
	}
	cmd.ValidArgsFunction = a.completeLogs
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	tailFlag(cmd.Flags(), &tail, `lines to show from the end ("all" for everything)`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		service := ""
		if len(args) == 1 {
			service = args[0]
		}
		eng, err := a.connect(cmd.Context())
		if err != nil {
			return err
		}
		defer eng.Close()
		return lifecycle.Logs(cmd.Context(), eng, a.project, service, follow, tail, a.out, a.errOut)
	}
	return cmd
}
