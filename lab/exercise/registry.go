package exercise

import (
	"context"
	"slices"

	"github.com/mltrain/mltrain/lab/nextstep"
)

// Exercise is one exercise of the lab, the one place it is defined: what the
// guide tells the student, how it runs, and the one judgment of its record.
// `lab`, `lab all`, `lab guide`, shell completion and `mltrain verify` all
// enumerate registry; the run and verify both judge a record with Judge.
type Exercise struct {
	Spec
	// Proves is what a record that Judge accepts shows, in a few words (the
	// title of verify's check).
	Proves string
	// NeedsEngine: the exercise works the lab's containers through the
	// Docker engine (fault stops a worker); the others only talk to Ray.
	NeedsEngine bool
	// Request is what the course asks of each job or training worker;
	// a run fits it to the lab's workers (size).
	Request Request
	run     func(context.Context, *runner) error
	judge   func(Record) []string
	// byHand writes Spec.ByHand where it names mltrain commands, which
	// must carry the lab's flags.
	byHand func(nextstep.Commands) string
}

// Judge is the verdict on an exercise's record: the ways what was observed
// falls short of what the lesson expects; none when it shows it. It reads
// only the record, so `mltrain verify` reaches the same verdict later.
func (e Exercise) Judge(rec Record) []string { return e.judge(rec) }

// registry holds the exercises in the order of the lab.
var registry = []Exercise{
	{
		Spec: Spec{
			Name: "submit", Title: "Submit a Lightning training job that asks for 1 GPU and 8 CPUs",
			Lesson:   "A Ray job is a driver program plus the resources it asks for; the working directory is uploaded as a package.",
			Expected: "the job goes PENDING -> RUNNING -> SUCCEEDED on one worker, using that worker's GPU",
			Look: []string{"Jobs tab: the job, its status and log (MLTRAIN_RESULT at the end)",
				"Cluster tab: one worker's GPU busy while it trains", "Metrics tab (Grafana): GPU utilisation of that node"},
			ByHand: "ray job submit --runtime-env runtime.json --working-dir . --entrypoint-num-gpus 1 --entrypoint-num-cpus 8 -- python train.py --mode plain",
		},
		Request: Request{CPUs: 8, PerNode: 1},
		Proves:  "a single-GPU job SUCCEEDED",
		run:     runSubmit, judge: judgeSubmit,
	},
	{
		Spec: Spec{
			Name: "infeasible", Title: "Submit a job that asks for 2 GPUs when no node has 2",
			Lesson:   "Resources are per node: two workers with one GPU each cannot run a single process that needs two.",
			Expected: "the job stays PENDING, no alive node has 2 GPUs, and cluster status lists a pending {'GPU': 2.0} demand",
			Look: []string{"Jobs tab: the job stays PENDING (\"may be waiting for resources\")",
				"Cluster tab, or the cluster status (the REST call in the workspace's README): Demands lists {'GPU': 2.0, 'CPU': 8.0}: 1+ pending tasks/actors"},
			ByHand: "ray job submit --no-wait --runtime-env runtime.json --working-dir . --entrypoint-num-gpus 2 --entrypoint-num-cpus 8 -- python train.py --mode plain; then end it by killing its supervisor actor _ray_internal_job_actor_<id> (Actors page, or the REST call in the workspace's README), since 'ray job stop' may leave an unplaced job PENDING",
		},
		Request: Request{CPUs: 8, PerNode: 1},
		Proves:  "a 2-GPU job stayed PENDING with its demand listed",
		run:     runInfeasible, judge: judgeInfeasible,
	},
	{
		Spec: Spec{
			Name: "multi", Title: "Ray Train over both workers: 2 workers x 1 GPU (DDP)",
			Lesson:   "Ray Train starts one training worker per GPU, on different nodes, and runs distributed data parallel between them.",
			Expected: "the job SUCCEEDS and its two training workers ran on two different worker nodes",
			Look: []string{"Jobs tab: the job; its log shows two RayTrainWorker processes with different ip=",
				"Cluster tab: both GPUs busy at once"},
			ByHand: "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --workers 2",
		},
		Request: Request{CPUs: 8, PerNode: 1},
		Proves:  "a 2-worker Ray Train job SUCCEEDED on both workers",
		run:     runMulti, judge: judgeMulti,
	},
	{
		Spec: Spec{
			Name: "fractional", Title: "Three jobs at once, each with 0.5 GPU and 4 CPUs",
			Lesson:   "GPUs are logical resources in Ray: fractions let several small jobs share one GPU.",
			Expected: "all three jobs SUCCEED, two of them sharing one GPU at the same time; makespan compared with one job alone",
			Look: []string{"Jobs tab: three jobs running at once", "Cluster tab: GPU usage 0.5/1 or 1/1 on the workers",
				"Metrics tab: two training processes on one GPU"},
			ByHand: "three times: ray job submit --no-wait --runtime-env runtime.json --working-dir . -- python train.py --mode ray --gpu-fraction 0.5 --cpus-per-worker 4",
		},
		Request: Request{CPUs: 4, PerNode: 2},
		Proves:  "three 0.5-GPU jobs trained at the same time",
		run:     runFractional, judge: judgeFractional,
	},
	{
		Spec: Spec{
			Name: "fault", Title: "Fault tolerance: stop the worker that trains, watch Ray resume elsewhere",
			Lesson:   "With FailureConfig(max_failures) and checkpoints in shared storage, Ray Train restarts a failed run on another node from the last checkpoint.",
			Expected: "the training worker's container is stopped once Ray Train has registered a checkpoint; training resumes on the other worker from that checkpoint (or a newer one), at the next epoch, and the job SUCCEEDS",
			Look: []string{"Jobs tab: the job's log shows MLTRAIN_EVENT checkpoint lines, the worker failure, then MLTRAIN_EVENT resume with the checkpoint",
				"Cluster tab: the stopped worker's node stays ALIVE until Ray's health checks give up on it (15 s to about a minute), then DEAD; ALIVE again after the restart",
				"MinIO console: bucket ray, the run's checkpoint_* folders"},
		},
		byHand: func(c nextstep.Commands) string {
			return "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --max-failures 2; while it trains: " +
				c.Line("worker", "stop", "N") + "; afterwards: " + c.Line("worker", "start", "N")
		},
		Request:     Request{CPUs: 8, PerNode: 1},
		Proves:      "training resumed from a registered MinIO checkpoint after a worker stop",
		NeedsEngine: true,
		run:         runFault, judge: judgeFault,
	},
	{
		Spec: Spec{
			Name: "tune", Title: "Hyperparameter search with Ray Tune and ASHA",
			Lesson:   "ASHA stops trials that do worse than their peers at the same epoch, so the budget goes to promising configurations.",
			Expected: "the job SUCCEEDS; ASHA stops some trials early and others run to max_t (trials that end on their own are counted apart, never as ASHA's); a best batch size and dropout are reported",
			Look: []string{"Jobs tab: the job's log shows Tune's trial table", "Cluster tab: four trials at 0.5 GPU each",
				"MinIO console: bucket ray, the Tune run's trial folders"},
			ByHand: "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode tune --num-samples 16",
		},
		Request: Request{CPUs: 4, PerNode: 2},
		Proves:  "a Tune run in which ASHA stopped trials early and others ran to max_t",
		run:     runTune, judge: judgeTune,
	},
}

// Exercises are the lab's exercises in order.
func Exercises() []Exercise { return slices.Clone(registry) }

// Lookup finds an exercise by name.
func Lookup(name string) (Exercise, bool) {
	for _, e := range registry {
		if e.Name == name {
			return e, true
		}
	}
	return Exercise{}, false
}

// Names are the exercises' names in order.
func Names() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.Name
	}
	return out
}

// Specs are the exercises' specs in order (the guide, and `lab guide
// --json`), their commands written by c.
func Specs(c nextstep.Commands) []Spec {
	out := make([]Spec, len(registry))
	for i, e := range registry {
		out[i] = e.Spec
		if e.byHand != nil {
			out[i].ByHand = e.byHand(c)
		}
	}
	return out
}
