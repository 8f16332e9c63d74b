package exercise

import (
	"context"
	"slices"
	"time"

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
	// Takes is how long it may run (takes.go), for a lab's lease.
	Takes Takes
	run   func(context.Context, *runner) error
	judge func(Record) []string
	// byHand writes Spec.ByHand where it names mltrain commands, which
	// must carry the lab's flags.
	byHand func(nextstep.Commands) string
}

// Judge is the verdict on an exercise's record: the ways what was observed
// falls short of what the lesson expects; none when it shows it. It reads
// only the record, so `mltrain verify` reaches the same verdict later.
func (e Exercise) Judge(rec Record) []string { return e.judge(rec) }

// The exercises' durations (Takes) start from docs/LAB.md's one measured
// figure: a full run of train.py (20 epochs, MobileNetV2 on Food-11, one
// A100, the course's 8 CPUs) takes 10-15 minutes; each counts its upper end,
// fullRun, in runs of train.py. A quick run (4 training batches per epoch,
// food11_model.py's trainer_limits) is job start-up: the runtime env, the
// working dir's upload, loading the dataset's file lists and the weights,
// and for Ray Train the worker group: quickRun, a minute and a half each,
// doubled to take in a loaded node. All six as the course runs them add up
// to about 2h20m, inside the 3 hours a node is leased for; with --quick to
// 25m ("minutes, not hours", as docs/LAB.md says of lab all --quick).
const (
	fullRun  = 15 * time.Minute
	quickRun = 3 * time.Minute
)

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
		// One plain run: the measured figure.
		Takes:  Takes{Full: fullRun, Quick: quickRun, Trains: true},
		Proves: "a single-GPU job SUCCEEDED",
		run:    runSubmit, judge: judgeSubmit,
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
		// No training: a submit, the 30 s watch (--observe) and ending the
		// supervisor actor.
		Takes:  Takes{Full: 2 * time.Minute, Quick: 2 * time.Minute, Watches: true},
		Proves: "a 2-GPU job stayed PENDING with its demand listed",
		run:    runInfeasible, judge: judgeInfeasible,
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
		// Two workers train half the data each, but the worker group's start
		// and DDP's all-reduce eat into the halving: counted as one run.
		Takes:  Takes{Full: fullRun, Quick: quickRun, Trains: true},
		Proves: "a 2-worker Ray Train job SUCCEEDED on both workers",
		run:    runMulti, judge: judgeMulti,
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
		// One job alone (0.5 GPU, 4 CPUs: no faster than a run), then three
		// at once, two of them sharing a GPU at half speed each: about two
		// runs more. Quick: two rounds of job start-up.
		Takes:  Takes{Full: 3 * fullRun, Quick: 5 * time.Minute, Trains: true},
		Proves: "three 0.5-GPU jobs trained at the same time",
		run:    runFractional, judge: judgeFractional,
	},
	{
		Spec: Spec{
			Name: "fault", Title: "Fault tolerance: stop the worker that trains, watch Ray resume elsewhere",
			Lesson:   "With FailureConfig(max_failures) and checkpoints in shared storage, Ray Train restarts a failed run on another node from the last checkpoint.",
			Expected: "the training worker's container is stopped once Ray Train has registered a checkpoint; training resumes on the other worker from that checkpoint (or a newer one), at the next epoch, and the job SUCCEEDS",
			Look: []string{"Jobs tab: the job's log shows MLTRAIN_EVENT checkpoint lines, the worker failure, then MLTRAIN_EVENT resume with the checkpoint",
				"Cluster tab: the stopped worker's node is DEAD within about a second (docker stop's SIGTERM makes its raylet unregister: \"received SIGTERM\"); after the restart the worker is a new node, ALIVE",
				"MinIO console: bucket ray, the run's checkpoint_* folders"},
		},
		byHand: func(c nextstep.Commands) string {
			return "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --max-failures 2; while it trains: " +
				c.Line("worker", "stop", "N") + "; afterwards: " + c.Line("worker", "start", "N")
		},
		Request: Request{CPUs: 8, PerNode: 1},
		// A run, plus the stop, Ray's health checks (up to about a minute),
		// the restart on the other worker and the epoch redone since the
		// checkpoint. Quick: 10 quick epochs and the same restart.
		Takes:       Takes{Full: fullRun + 5*time.Minute, Quick: 2 * quickRun, Trains: true},
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
		// 16 trials, 4 at a time at 0.5 GPU (two per GPU, each at about
		// half speed). ASHA (grace 1, reduction factor 2, max_t 20), counted
		// as synchronous halving, runs 16·1 + 8·1 + 4·2 + 2·4 + 1·8 + 1·4 =
		// 52 trial-epochs; an epoch is fullRun/20 = 45 s alone, 90 s at half
		// a GPU; 4 at once: about 20m. Asynchronous ASHA promotes more
		// eagerly: doubled, with the trials' start-up, 45m. Quick: 8 trials,
		// two rounds of start-up.
		Takes:  Takes{Full: 3 * fullRun, Quick: 2 * quickRun, Trains: true},
		Proves: "a Tune run in which ASHA stopped trials early and others ran to max_t",
		run:    runTune, judge: judgeTune,
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
