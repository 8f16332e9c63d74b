package main

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/verify"
)

// Shell completion (cobra's __complete, which 'mltrain completion bash'
// scripts call): the values each command takes, from the lab itself when the
// engine answers quickly, else from what mltrain knows.

const completeTimeout = 2 * time.Second

// completeOnly completes --only's comma list: the groups not chosen yet,
// after the ones already typed.
func completeOnly(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, _ := cutLast(toComplete, ",")
	chosen := strings.Split(done, ",")
	var out []string
	for _, g := range verify.Groups {
		if c := join(done, g); !slices.Contains(chosen, g) && strings.HasPrefix(c, toComplete) {
			out = append(out, c)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeExercise completes `lab`'s argument: the registry's exercises
// with their titles, then all and guide.
func completeExercise(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, ex := range exercise.Exercises() {
		out = append(out, ex.Name+"\t"+ex.Title)
	}
	out = append(out, labAll+"\tevery exercise in order", labGuide+"\tprint the whole guided lab")
	return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// cutLast splits s at its last sep: what is before it ("" when none).
func cutLast(s, sep string) (string, string) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

func join(done, g string) string {
	if done == "" {
		return g
	}
	return done + "," + g
}

// labServices are the lab's service names: its containers' when the engine
// answers, else the plan's of the last up, else the lab's usual ones.
// workers are the worker indexes, found the same way.
func (a *app) labServices(ctx context.Context) (services []string, workers []int) {
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	if eng, err := a.connect(ctx); err == nil {
		defer eng.Close()
		if list, err := eng.ContainerList(ctx, map[string]string{labels.Project: a.project}); err == nil && len(list) > 0 {
			for _, c := range list {
				services = append(services, c.Labels[labels.Service])
				if i, err := strconv.Atoi(c.Labels[labels.WorkerIndex]); err == nil {
					workers = append(workers, i)
				}
			}
			sort.Strings(services)
			sort.Ints(workers)
			return services, workers
		}
	}
	n := 2 // one worker per GPU: the course's nodes have two
	if st, err := a.StateDir().State(); err == nil && len(st.Plan.Workers) > 0 {
		n = len(st.Plan.Workers)
	}
	var names []string
	for i := range n {
		names = append(names, service.WorkerService(i))
		workers = append(workers, i)
	}
	services = service.Names(names, false)
	sort.Strings(services)
	return services, workers
}

func (a *app) completeLogs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	services, _ := a.labServices(cmd.Context())
	return withPrefix(services, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// withPrefix keeps the candidates that start with what is typed.
func withPrefix(cands []string, typed string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, typed) {
			out = append(out, c)
		}
	}
	return out
}

func (a *app) completeWorker(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return withPrefix([]string{"stop\tstop ray-worker-N gracefully", "start\tstart it again and wait until it rejoined"}, toComplete),
			cobra.ShellCompDirectiveNoFileComp
	case 1:
		_, workers := a.labServices(cmd.Context())
		out := make([]string, len(workers))
		for i, w := range workers {
			out[i] = strconv.Itoa(w)
		}
		return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
