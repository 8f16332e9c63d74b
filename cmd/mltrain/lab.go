package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/exercise"
)

// The lab command's arguments besides the exercises.
const (
	labAll   = "all"
	labGuide = "guide"
)

func (a *app) labCmd() *cobra.Command {
	var o exercise.Options
	var c exercise.Sources
	var noWait bool
	names := append(exercise.Names(), labAll, labGuide)
	cmd := &cobra.Command{
		Use:   "lab EXERCISE",
		Short: "Run a scripted lab exercise and report what happened",
		Long: `Run one of the lab's exercises against the Ray cluster, tell what to look at in the
dashboard, measure what happened, and exit 0 only when the cluster behaved as the lesson says.

Exercises: ` + strings.Join(exercise.Names(), ", ") + `
  all     every exercise in order (use --quick for an instructor's rehearsal)
  guide   print the whole guided lab

Ray is found through --ray-address/--ray-token, else RAY_ADDRESS/RAY_AUTH_TOKEN, else the
lab's state directory. MinIO (fault) through --minio-endpoint or AWS_ENDPOINT_URL, with
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeExercise,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := notNegative(cmd, "cpus", "epochs", "num-samples", "timeout", "observe", "checkpoint-timeout", "poll"); err != nil {
				return err
			}
			if name == labGuide {
				if a.json {
					return printJSON(a.out, exercise.Specs(a.lab()))
				}
				_, err := fmt.Fprint(a.out, exercise.Guide(a.lab(), c.RayAddressGiven()))
				return err
			}
			ex, ok := exercise.Lookup(name)
			if !ok && name != labAll {
				return clierr.WithCode(clierr.Hintf("run '"+a.lab().Line("lab", labGuide)+"' to see the exercises",
					"unknown exercise %q (one of: %s)", name, strings.Join(names, ", ")), clierr.ExitUsage)
			}
			if err := a.leaseFits(cmd, args, name, o); err != nil {
				return err
			}
			needEngine := ex.NeedsEngine
			if name == labAll {
				needEngine = slices.ContainsFunc(exercise.Exercises(), func(e exercise.Exercise) bool { return e.NeedsEngine })
			}
			env, err := exercise.Connect(a.lab(), c)
			if err != nil {
				return err
			}
			// Without the engine the other exercises still run; they only
			// cannot name the worker containers.
			if eng, err := a.connect(cmd.Context()); err == nil {
				defer eng.Close()
				env.Engine = eng
			} else if needEngine {
				return err
			}
			rep, done := a.reporter()
			env.Reporter = rep
			if needEngine { // it stops and starts the lab's workers: the lab's writer
				l, err := a.lockLab(cmd, args, env.Engine, noWait, rep)
				if err != nil {
					done()
					return err
				}
				defer l.Release()
			}
			if name == labAll {
				start := time.Now()
				recs, err := exercise.All(cmd.Context(), env, o)
				done()
				if err := a.printRecords(recs, err); err != nil || a.json {
					return err
				}
				fmt.Fprintf(a.out, "\n%s\n", exercise.Summary(recs, time.Since(start)))
				return nil
			}
			rec, err := exercise.Run(cmd.Context(), env, name, o)
			done()
			if rec.Exercise == "" {
				return err
			}
			return a.printRecords([]exercise.Record{rec}, err)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Workspace, "workspace", "", "directory submitted as the job's working_dir (default: the lab's workspace in the state dir, created when absent)")
	fl.StringVar(&c.RayAddress, "ray-address", "", "Ray dashboard URL (default $RAY_ADDRESS, else the lab's)")
	fl.StringVar(&c.RayToken, "ray-token", "", "Ray auth token (default $RAY_AUTH_TOKEN, else the lab's)")
	fl.StringVar(&c.MinIOEndpoint, "minio-endpoint", "", "MinIO S3 endpoint, e.g. http://127.0.0.1:9000 (default $AWS_ENDPOINT_URL, else the lab's)")
	fl.StringToStringVar(&c.JobEnv, "job-env", nil, "extra environment for the jobs, KEY=VALUE (e.g. MLTRAIN_ACCELERATOR=cpu)")
	addNoWait(fl, &noWait, "fault and all (they stop and start workers): fail at once when another mltrain command is changing the lab, instead of waiting")
	fl.BoolVar(&o.Quick, "quick", false, "a few batches per epoch: a rehearsal, not a real training run")
	fl.BoolVar(&o.FakeData, "fake-data", false, "train on random images with no pretrained weights (no dataset, no download)")
	fl.IntVar(&o.Epochs, "epochs", 0, "epochs per run (default train.py's: 20, or 2 with --quick; fault uses 10 with --quick)")
	fl.Float64Var(&o.CPUs, "cpus", 0, "CPUs each job or training worker asks for, instead of the course's 8 (or 4 for fractional/tune)")
	fl.DurationVar(&o.Observe, "observe", 30*time.Second, "infeasible: how long to watch the job stay PENDING")
	fl.BoolVar(&o.Keep, "keep", false, "infeasible: leave the job pending instead of stopping it")
	fl.IntVar(&o.NumSamples, "num-samples", 0, "tune: number of trials (default 16, or 8 with --quick)")
	fl.DurationVar(&o.Timeout, "timeout", 0, "longest wait for one job (default 3h, or 30m with --quick)")
	fl.DurationVar(&o.CheckpointTimeout, "checkpoint-timeout", 15*time.Minute, "fault: longest wait for the first checkpoint in MinIO")
	fl.StringVar(&o.Resume, "resume", "", "multi: continue Ray Train run `RUN` from its latest checkpoint in s3://ray (e.g. after 'mltrain restore')")
	fl.DurationVar(&o.Poll, "poll", 2*time.Second, "interval between status polls")
	_ = fl.MarkHidden("poll")
	return cmd
}

func (a *app) printRecords(recs []exercise.Record, err error) error {
	if a.json {
		var v any = recs
		if len(recs) == 1 {
			v = recs[0]
		}
		if perr := printJSON(a.out, v); perr != nil {
			return perr
		}
		return err
	}
	for i, r := range recs {
		if i > 0 {
			fmt.Fprintln(a.out)
		}
		fmt.Fprint(a.out, r.Text())
	}
	return err
}
