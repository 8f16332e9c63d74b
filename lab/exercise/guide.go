package exercise

import (
	"fmt"
	"strings"
)

// Spec describes an exercise: what the lesson teaches, what should be seen,
// and where to look. The guide and each run's record are built from it.
type Spec struct {
	Name     string   `json:"name"`
	Title    string   `json:"title"`
	Lesson   string   `json:"lesson"`
	Expected string   `json:"expected"`
	Look     []string `json:"look"`    // what to open in the dashboard
	ByHand   string   `json:"by_hand"` // the same thing with the Ray CLI, from Jupyter
}

// Specs are the exercises in lab order.
var Specs = []Spec{
	{
		Name: "submit", Title: "Submit a Lightning training job that asks for 1 GPU and 8 CPUs",
		Lesson:   "A Ray job is a driver program plus the resources it asks for; the working directory is uploaded as a package.",
		Expected: "the job goes PENDING -> RUNNING -> SUCCEEDED on one worker, using that worker's GPU",
		Look: []string{"Jobs tab: the job, its status and log (MLTRAIN_RESULT at the end)",
			"Cluster tab: one worker's GPU busy while it trains", "Metrics tab (Grafana): GPU utilisation of that node"},
		ByHand: "ray job submit --runtime-env runtime.json --working-dir . --entrypoint-num-gpus 1 --entrypoint-num-cpus 8 -- python train.py --mode plain",
	},
	{
		Name: "infeasible", Title: "Submit a job that asks for 2 GPUs when no node has 2",
		Lesson:   "Resources are per node: two workers with one GPU each cannot run a single process that needs two.",
		Expected: "the job stays PENDING, no alive node has 2 GPUs, and cluster status lists a pending {'GPU': 2.0} demand",
		Look: []string{"Jobs tab: the job stays PENDING (\"may be waiting for resources\")",
			"Cluster tab / `ray status`: Demands lists {'GPU': 2.0, 'CPU': 8.0}: 1+ pending tasks/actors"},
		ByHand: "ray job submit --no-wait --runtime-env runtime.json --working-dir . --entrypoint-num-gpus 2 --entrypoint-num-cpus 8 -- python train.py --mode plain; then: ray job stop <id>",
	},
	{
		Name: "multi", Title: "Ray Train over both workers: 2 workers x 1 GPU (DDP)",
		Lesson:   "Ray Train starts one training worker per GPU, on different nodes, and runs distributed data parallel between them.",
		Expected: "the job SUCCEEDS and its two training workers ran on two different worker nodes",
		Look: []string{"Jobs tab: the job; its log shows two RayTrainWorker processes with different ip=",
			"Train tab: the run with 2 workers", "Cluster tab: both GPUs busy at once"},
		ByHand: "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --workers 2",
	},
	{
		Name: "fractional", Title: "Three jobs at once, each with 0.5 GPU and 4 CPUs",
		Lesson:   "GPUs are logical resources in Ray: fractions let several small jobs share one GPU.",
		Expected: "all three jobs SUCCEED, two of them sharing one GPU at the same time; makespan compared with one job alone",
		Look: []string{"Jobs tab: three jobs running at once", "Cluster tab: GPU usage 0.5/1 or 1/1 on the workers",
			"Metrics tab: two training processes on one GPU"},
		ByHand: "three times: ray job submit --no-wait --runtime-env runtime.json --working-dir . -- python train.py --mode ray --gpu-fraction 0.5 --cpus-per-worker 4",
	},
	{
		Name: "fault", Title: "Fault tolerance: stop the worker that trains, watch Ray resume elsewhere",
		Lesson:   "With FailureConfig(max_failures) and checkpoints in shared storage, Ray Train restarts a failed run on another node from the last checkpoint.",
		Expected: "the training worker's container is stopped once Ray Train has registered a checkpoint; training resumes on the other worker from that checkpoint (or a newer one), at the next epoch, and the job SUCCEEDS",
		Look: []string{"Jobs tab: the job's log shows MLTRAIN_EVENT checkpoint lines, the worker failure, then MLTRAIN_EVENT resume with the checkpoint",
			"Cluster tab: the stopped worker's node stays ALIVE until Ray's health checks give up on it (about 15 s), then DEAD; ALIVE again after the restart",
			"MinIO console: bucket ray, the run's checkpoint_* folders"},
		ByHand: "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --max-failures 2; while it trains: mltrain worker stop N; afterwards: mltrain worker start N",
	},
	{
		Name: "tune", Title: "Hyperparameter search with Ray Tune and ASHA",
		Lesson:   "ASHA stops trials that do worse than their peers at the same epoch, so the budget goes to promising configurations.",
		Expected: "the job SUCCEEDS; ASHA stops some trials early and others run to max_t (trials that end on their own are counted apart, never as ASHA's); a best batch size and dropout are reported",
		Look: []string{"Jobs tab: the job's log shows Tune's trial table", "Cluster tab: four trials at 0.5 GPU each",
			"MinIO console: bucket ray, the Tune run's trial folders"},
		ByHand: "ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode tune --num-samples 16",
	},
}

// SpecOf returns an exercise's spec (zero when unknown).
func SpecOf(name string) Spec {
	for _, s := range Specs {
		if s.Name == name {
			return s
		}
	}
	return Spec{Name: name}
}

// Guide is the whole guided lab as text, for `mltrain lab guide`.
func Guide(dashboard string) string {
	if dashboard == "" {
		dashboard = "the Ray dashboard (mltrain status shows its URL)"
	}
	var b strings.Builder
	b.WriteString("The mltrain Ray lab: six exercises. Run each with `mltrain lab <name>`, or by hand from a\n")
	b.WriteString("Jupyter terminal in the workspace (RAY_ADDRESS and RAY_AUTH_TOKEN are set there).\n")
	fmt.Fprintf(&b, "Keep %s open while they run.\n", dashboard)
	b.WriteString("Add --quick for a rehearsal of a few batches per epoch; `mltrain lab all --quick` runs them all.\n")
	for i, s := range Specs {
		fmt.Fprintf(&b, "\n%d. %s  (mltrain lab %s)\n", i+1, s.Title, s.Name)
		fmt.Fprintf(&b, "   Why: %s\n", s.Lesson)
		fmt.Fprintf(&b, "   Expect: %s\n", s.Expected)
		for _, l := range s.Look {
			fmt.Fprintf(&b, "   Look: %s\n", l)
		}
		fmt.Fprintf(&b, "   By hand: %s\n", s.ByHand)
	}
	b.WriteString("\nAfterwards `mltrain verify` checks every step from the records the exercises left.\n")
	return b.String()
}

// Text renders a record for the terminal: verdict, what to look at, numbers.
func (rec Record) Text() string {
	var b strings.Builder
	verdict := "OK"
	if !rec.OK {
		verdict = "NOT OBSERVED"
		if rec.Error != "" && len(rec.Problems) == 0 {
			verdict = "FAILED"
		}
	}
	fmt.Fprintf(&b, "%s: %s\n", rec.Exercise, verdict)
	if rec.Expected != "" {
		fmt.Fprintf(&b, "  expected: %s\n", rec.Expected)
	}
	if rec.Observed != "" {
		fmt.Fprintf(&b, "  observed: %s\n", rec.Observed)
	}
	for _, l := range rec.Look {
		fmt.Fprintf(&b, "  look: %s\n", l)
	}
	for _, n := range rec.Numbers {
		fmt.Fprintf(&b, "  %-34s %10.1f %s\n", n.Name, n.Value, n.Unit)
	}
	for _, j := range rec.Jobs {
		where := strings.Join(j.Containers, ",")
		if where == "" {
			where = strings.Join(j.NodeIPs, ",")
		}
		fmt.Fprintf(&b, "  job %s  %s  %.0fs  %s\n", j.SubmissionID, j.Status, j.Seconds, where)
	}
	for _, p := range rec.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}
