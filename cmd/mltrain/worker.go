package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

func (a *app) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker stop|start N",
		Short: "Stop or start one Ray worker (0-based, as ray-worker-N)",
		Long: `worker stop N stops ray-worker-N gracefully, as the fault-tolerance exercise's
'docker stop ray-worker-N' does; worker start N starts it again and waits until
it is healthy and has rejoined the cluster.`,
		Args: cobra.ExactArgs(2),
	}
	cmd.ValidArgsFunction = a.completeWorker
	var noWait bool
	addNoWait(cmd.Flags(), &noWait, "")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 {
			return clierr.WithCode(clierr.Hintf("e.g. '"+a.lab().Line("worker", "stop", "1")+"'", "worker index %q is not a number >= 0", args[1]), clierr.ExitUsage)
		}
		action := map[string]func(context.Context, docker.Engine, string, int) (string, error){
			"stop": lifecycle.StopWorker, "start": lifecycle.StartWorker,
		}[args[0]]
		if action == nil {
			return clierr.WithCode(clierr.Hintf("use '"+a.lab().Line("worker", "stop", "N")+"' or '"+a.lab().Line("worker", "start", "N")+"'", "unknown worker action %q", args[0]), clierr.ExitUsage)
		}
		w, err := a.write(cmd, args, noWait, true)
		if err != nil {
			return err
		}
		defer w.release()
		w.progressDone()
		name, err := action(cmd.Context(), w.eng, a.project, n)
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.out, map[string]string{"worker": name, "action": args[0]})
		}
		fmt.Fprintf(a.out, "%s: %sed\n", name, map[string]string{"stop": "stopp", "start": "start"}[args[0]])
		return nil
	}
	return cmd
}
