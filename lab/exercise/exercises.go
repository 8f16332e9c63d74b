package exercise

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
)

// look sets the record's "what to look at" lines: the job's page first.
func (r *runner) look(urls ...string) {
	r.rec.Look = nil
	for _, u := range urls {
		r.rec.Look = append(r.rec.Look, "open "+u)
	}
	r.rec.Look = append(r.rec.Look, SpecOf(r.rec.Exercise).Look...)
	for _, l := range r.rec.Look {
		progress.Note(r.env.Reporter, l)
	}
}

func (r *runner) checkFinished(i int) {
	jr := r.rec.Jobs[i]
	if jr.Status != ray.Succeeded {
		r.problem("job %s ended %s: %s", jr.SubmissionID, jr.Status, jr.Message)
		return
	}
	if jr.Result == nil {
		r.problem("job %s has no %s line in its log: train.py did not reach its end", jr.SubmissionID, ResultMarker)
		return
	}
	if !jr.Result.Succeeded() {
		r.problem("job %s: train.py reports failure: %s", jr.SubmissionID, jr.Result.Error)
	}
}

func where(jr JobRun) string {
	if len(jr.Containers) > 0 {
		return strings.Join(jr.Containers, " and ")
	}
	if len(jr.NodeIPs) > 0 {
		return "node " + strings.Join(jr.NodeIPs, " and ")
	}
	return "an unreported node"
}

func runSubmit(ctx context.Context, r *runner) error {
	i, err := r.submit(ctx, jobSpec{args: r.trainArgs("--mode", "plain"), gpus: 1, cpus: r.cpus(8)})
	if err != nil {
		return err
	}
	r.look(r.rec.Jobs[i].URL)
	if _, err := r.wait(ctx, i); err != nil {
		return err
	}
	r.checkFinished(i)
	jr := r.rec.Jobs[i]
	r.number("job duration", jr.Seconds, "s")
	if jr.Result != nil {
		r.number("training (fit) time", jr.Result.FitSeconds, "s")
		if acc, ok := jr.Result.Test["test_accuracy"].(float64); ok {
			r.number("test accuracy", acc*100, "%")
		}
	}
	r.rec.Observed = fmt.Sprintf("job %s %s in %.0fs on %s", jr.SubmissionID, jr.Status, jr.Seconds, where(jr))
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

func runInfeasible(ctx context.Context, r *runner) error {
	nodes, err := r.env.Ray.Nodes(ctx)
	if err != nil {
		return err
	}
	maxGPU, big := ray.MaxGPUsPerNode(nodes)
	obs := &InfeasibleObs{MaxGPUsPerNode: maxGPU, Nodes: nodes, Requested: map[string]float64{"GPU": 2, "CPU": r.cpus(8)}}
	for _, n := range nodes {
		if n.Alive() {
			obs.AliveNodes++
		}
	}
	r.rec.Infeasible = obs
	i, err := r.submit(ctx, jobSpec{args: r.trainArgs("--mode", "plain"), gpus: 2, cpus: r.cpus(8)})
	if err != nil {
		return err
	}
	id := r.rec.Jobs[i].SubmissionID
	r.look(r.rec.Jobs[i].URL, r.dashboard("/#/cluster"))
	start := r.env.Now()
	obs.StayedPending = true
	var last ray.Job
	for {
		j, err := r.env.Ray.Job(ctx, id)
		if err != nil {
			return err
		}
		last = j
		obs.JobMessage = j.Message
		if j.Status != ray.Pending {
			obs.StayedPending = false
			break
		}
		if obs.Demand == nil {
			if text, err := r.env.Ray.ClusterStatus(ctx); err == nil {
				obs.ClusterStatus = text
				if d, ok := ray.FindDemand(ray.ParseDemands(text), map[string]float64{"GPU": 2}); ok {
					obs.Demand = &d
					obs.DemandSeenAfter = r.env.Now().Sub(start).Seconds()
					r.say("cluster status lists the demand: %s", d.Line)
				}
			}
		}
		obs.PendingSeconds = r.env.Now().Sub(start).Seconds()
		if r.env.Now().Sub(start) >= r.o.Observe {
			break
		}
		r.say("%s PENDING for %.0fs of %s", id, obs.PendingSeconds, r.o.Observe)
		if err := sleep(ctx, r.o.Poll); err != nil {
			return err
		}
	}
	if !r.o.Keep && !last.Status.Terminal() {
		// The course leaves it pending forever; Ray would fail it after
		// RAY_JOB_START_TIMEOUT_SECONDS (15 min). Clean up now.
		if _, err := r.env.Ray.Stop(ctx, id); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		last, err = r.env.Ray.Wait(wctx, id, ray.WaitOptions{Poll: r.o.Poll})
		cancel()
		if err != nil {
			return fmt.Errorf("stop the infeasible job %s: %w", id, err)
		}
		obs.StoppedAfter = last.Status == ray.Stopped
	}
	r.fill(ctx, i, last)
	r.number("seconds PENDING (observed)", obs.PendingSeconds, "s")
	r.number("most GPUs on one alive node", obs.MaxGPUsPerNode, "")
	if obs.Demand != nil {
		r.number("demand listed after", obs.DemandSeenAfter, "s")
	}
	if !obs.StayedPending {
		r.problem("job %s left PENDING (%s) after %.0fs: some node could run it", id, last.Status, obs.PendingSeconds)
	}
	if maxGPU >= 2 {
		r.problem("node %s (%s) has %.0f GPUs: a 2-GPU job is feasible on this cluster, so the lesson does not apply", big.NodeIP, big.NodeID, maxGPU)
	}
	if obs.Demand == nil {
		r.problem("cluster status did not list a {'GPU': 2.0} demand within %s", r.o.Observe)
	}
	demand := "no demand line"
	if obs.Demand != nil {
		demand = "cluster status lists \"" + obs.Demand.Line + "\""
	}
	r.rec.Observed = fmt.Sprintf("job stayed PENDING for %.0fs (message: %q); at most %.0f GPU per alive node (%d alive); %s",
		obs.PendingSeconds, obs.JobMessage, maxGPU, obs.AliveNodes, demand)
	if r.o.Keep {
		r.rec.Observed += "; the job was left pending (--keep): stop it with 'ray job stop " + id + "'"
	} else if obs.StoppedAfter {
		r.rec.Observed += "; then stopped it"
	}
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

// runJob submits one training job with its own run name, points the
// student at it and the dashboard page, and waits for it to end.
func (r *runner) runJob(ctx context.Context, args []string, page string) (int, error) {
	i, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return 0, err
	}
	r.look(r.rec.Jobs[i].URL, r.dashboard(page))
	if _, err := r.wait(ctx, i); err != nil {
		return i, err
	}
	r.checkFinished(i)
	return i, nil
}

func runMulti(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "ray", "--workers", "2", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus(8)))
	i, err := r.runJob(ctx, args, "/#/train")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	r.number("job duration", jr.Seconds, "s")
	if jr.Result != nil {
		r.number("training (fit) time", jr.Result.FitSeconds, "s")
	}
	r.number("distinct worker nodes used", float64(len(jr.NodeIPs)), "")
	if len(jr.NodeIPs) < 2 {
		r.problem("the training workers ran on %d node(s) (%s), not on both worker nodes", len(jr.NodeIPs), strings.Join(jr.NodeIPs, ", "))
	}
	r.rec.Observed = fmt.Sprintf("job %s %s in %.0fs; training workers on %s", jr.SubmissionID, jr.Status, jr.Seconds, where(jr))
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

type interval struct {
	job, node string
	from, to  time.Time
}

// maxOverlap is the most intervals open at one instant.
func maxOverlap(iv []interval) int {
	type edge struct {
		t     time.Time
		delta int
	}
	var es []edge
	for _, v := range iv {
		es = append(es, edge{v.from, 1}, edge{v.to, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].t.Equal(es[j].t) {
			return es[i].delta < es[j].delta // an end before a start at the same instant
		}
		return es[i].t.Before(es[j].t)
	})
	cur, max := 0, 0
	for _, e := range es {
		cur += e.delta
		if cur > max {
			max = cur
		}
	}
	return max
}

// sharedNode returns a node on which two jobs trained at the same time.
func sharedNode(iv []interval) string {
	for a := 0; a < len(iv); a++ {
		for b := a + 1; b < len(iv); b++ {
			if iv[a].node != "" && iv[a].node == iv[b].node && iv[a].from.Before(iv[b].to) && iv[b].from.Before(iv[a].to) {
				return iv[a].node
			}
		}
	}
	return ""
}

func runFractional(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "ray", "--workers", "1", "--gpu-fraction", "0.5", "--cpus-per-worker", fmt.Sprint(r.cpus(4)))
	obs := &FractionalObs{JobsByNode: map[string][]string{}}
	r.rec.Fractional = obs
	r.say("first one job alone, for the baseline")
	alone, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return err
	}
	r.look(r.env.Ray.Address()+"/#/jobs", r.dashboard("/#/cluster"))
	if _, err := r.wait(ctx, alone); err != nil {
		return err
	}
	r.checkFinished(alone)
	obs.AloneSeconds = r.rec.Jobs[alone].Seconds

	var idx []int
	for k := 0; k < 3; k++ {
		i, err := r.submit(ctx, jobSpec{args: args, runName: true})
		if err != nil {
			return err
		}
		idx = append(idx, i)
	}
	var ivs []interval
	var first, last time.Time
	for _, i := range idx {
		if _, err := r.wait(ctx, i); err != nil {
			return err
		}
		r.checkFinished(i)
		jr := r.rec.Jobs[i]
		if first.IsZero() || jr.Start.Before(first) {
			first = jr.Start
		}
		if jr.End.After(last) {
			last = jr.End
		}
	}
	var ips []string
	for _, i := range idx {
		ips = append(ips, r.rec.Jobs[i].NodeIPs...)
	}
	names := workerNames(ctx, r.env.Engine, r.env.Project, ips)
	for _, i := range idx {
		jr := r.rec.Jobs[i]
		ws := EventsOf(r.events[i], "worker")
		if len(ws) == 0 {
			r.problem("job %s reported no training worker: cannot tell which GPU ran it", jr.SubmissionID)
			continue
		}
		w := ws[len(ws)-1]
		node := w.NodeIP
		if n, ok := names[node]; ok {
			node = n
		}
		obs.JobsByNode[node] = append(obs.JobsByNode[node], jr.SubmissionID)
		ivs = append(ivs, interval{job: jr.SubmissionID, node: node, from: w.At(), to: jr.End})
	}
	obs.MakespanSeconds = last.Sub(first).Seconds()
	if obs.AloneSeconds > 0 {
		obs.Ratio = obs.MakespanSeconds / obs.AloneSeconds
	}
	obs.MaxConcurrent = maxOverlap(ivs)
	obs.SharedNode = sharedNode(ivs)
	r.number("one job alone", obs.AloneSeconds, "s")
	r.number("three jobs at once (makespan)", obs.MakespanSeconds, "s")
	r.number("makespan / one alone", obs.Ratio, "x")
	r.number("jobs training at the same time", float64(obs.MaxConcurrent), "")
	if obs.SharedNode == "" && len(ivs) == 3 {
		r.problem("no GPU ran two of the jobs at the same time (jobs by node: %v)", obs.JobsByNode)
	}
	var parts []string
	for _, n := range sortedKeys(obs.JobsByNode) {
		parts = append(parts, fmt.Sprintf("%s ran %d", n, len(obs.JobsByNode[n])))
	}
	r.rec.Observed = fmt.Sprintf("3 jobs at 0.5 GPU: makespan %.0fs vs %.0fs for one alone (%.2fx); up to %d training at once; %s",
		obs.MakespanSeconds, obs.AloneSeconds, obs.Ratio, obs.MaxConcurrent, strings.Join(parts, ", "))
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

// normCheckpoint turns Ray's checkpoint path ("ray/run/checkpoint_…" or
// "s3://ray/run/checkpoint_…") into the bucket-relative path the store lists.
func normCheckpoint(p, bucket string) string {
	p = strings.TrimPrefix(p, "s3://")
	p = strings.TrimPrefix(p, bucket+"/")
	return strings.TrimRight(p, "/")
}

func runFault(ctx context.Context, r *runner) error {
	if r.env.Engine == nil {
		return clierr.Hintf("run 'mltrain lab fault' on the lab's host, where Docker is reachable",
			"the fault exercise stops a worker container: it needs the Docker engine")
	}
	if r.env.Store == nil {
		return clierr.Hintf("pass --minio-endpoint and set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run 'mltrain up'",
			"the fault exercise watches checkpoints in MinIO: no MinIO configured")
	}
	epochs := r.o.Epochs
	if epochs == 0 && r.o.Quick {
		epochs = 10 // enough quick epochs to stop the worker mid-run
	}
	args := []string{"--mode", "ray", "--workers", "1", "--gpu-fraction", "1", "--cpus-per-worker", fmt.Sprint(r.cpus(8)), "--max-failures", "2"}
	if r.o.Quick {
		args = append(args, "--quick")
	}
	if r.o.FakeData {
		args = append(args, "--fake-data")
	}
	if epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(epochs))
	}
	i, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return err
	}
	id := r.rec.Jobs[i].SubmissionID
	obs := &FaultObs{Run: id}
	r.rec.Fault = obs
	r.look(r.rec.Jobs[i].URL, r.dashboard("/#/cluster"))

	cctx, cancel := context.WithTimeout(ctx, r.o.CheckpointTimeout)
	defer cancel()
	// 1. Which node trains? The worker says so in the log.
	r.say("waiting for the training worker to start")
	var worker Event
	err = r.poll(cctx, i, func(events []Event) (bool, error) {
		for _, e := range EventsOf(events, "worker") {
			if e.Rank == 0 && e.NodeIP != "" {
				worker = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return r.timeoutHint(err, cctx, "no training worker reported where it runs within "+r.o.CheckpointTimeout.String())
	}
	obs.TrainingNodeIP = worker.NodeIP
	// 2. Which container is that node?
	c, err := WorkerByIP(ctx, r.env.Engine, r.env.Project, worker.NodeIP)
	if err != nil {
		return err
	}
	r.say("training runs on %s (%s)", c.Name, worker.NodeIP)
	// 3. A checkpoint must exist before the failure, or there is nothing to resume.
	prefix := id + "/"
	var cps []store.Checkpoint
	err = r.poll(cctx, i, func([]Event) (bool, error) {
		var err error
		cps, err = r.env.Store.ListCheckpoints(cctx, r.env.Bucket, prefix)
		return len(cps) > 0, err
	})
	if err != nil {
		return r.timeoutHint(err, cctx, fmt.Sprintf("no checkpoint appeared in s3://%s/%s within %s", r.env.Bucket, prefix, r.o.CheckpointTimeout))
	}
	obs.LatestAtStop = cps[len(cps)-1].Path
	// 4. Stop the worker, and whatever happens, start it again at the end.
	r.say("checkpoint %s exists: stopping %s", obs.LatestAtStop, c.Name)
	obs.StoppedAt = r.env.Now()
	if err := r.env.Engine.ContainerStop(ctx, c.ID, stopTimeoutSec*time.Second); err != nil {
		return fmt.Errorf("stop worker container %s: %w", c.Name, err)
	}
	obs.StoppedContainer = c.Name
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := r.env.Engine.ContainerStart(sctx, c.ID); err != nil {
			obs.RestartError = err.Error()
			r.problem("could not start %s again: %v (run 'mltrain worker start')", c.Name, err)
			return
		}
		d, err := r.env.Engine.ContainerInspect(sctx, c.ID)
		obs.Restarted = err == nil && d.Running
		if obs.Restarted {
			r.say("started %s again", c.Name)
		}
	}()
	// 5. Ray should restart training elsewhere from the checkpoint.
	r.say("waiting for Ray Train to resume from a checkpoint")
	var resume Event
	var seenAt time.Time
	rctx, rcancel := context.WithTimeout(ctx, r.o.Timeout)
	defer rcancel()
	err = r.poll(rctx, i, func(events []Event) (bool, error) {
		for _, e := range EventsOf(events, "resume") {
			if !e.At().Before(obs.StoppedAt.Add(-2 * time.Second)) {
				resume, seenAt = e, r.env.Now()
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return r.timeoutHint(err, rctx, "training did not resume from a checkpoint after "+c.Name+" was stopped")
	}
	obs.ResumedFrom = normCheckpoint(resume.Checkpoint, r.env.Bucket)
	obs.ResumedOnNodeIP = resume.NodeIP
	if rc, err := WorkerByIP(ctx, r.env.Engine, r.env.Project, resume.NodeIP); err == nil {
		obs.ResumedContainer = rc.Name
	}
	// The worker's own timestamp is the precise one; if clocks disagree,
	// fall back to when the log line was seen.
	obs.RecoverySeconds = resume.At().Sub(obs.StoppedAt).Seconds()
	if obs.RecoverySeconds < 0 {
		obs.RecoverySeconds = seenAt.Sub(obs.StoppedAt).Seconds()
	}
	r.say("resumed on %s from %s after %.0fs", resume.NodeIP, obs.ResumedFrom, obs.RecoverySeconds)
	// 6. The job must finish.
	if _, err := r.wait(ctx, i); err != nil {
		return err
	}
	r.checkFinished(i)
	// 7. The checkpoint it resumed from must be one MinIO holds.
	after, err := r.env.Store.ListCheckpoints(ctx, r.env.Bucket, prefix)
	if err != nil {
		return err
	}
	for _, cp := range after {
		obs.Checkpoints = append(obs.Checkpoints, cp.Path)
		if cp.Path == obs.ResumedFrom {
			obs.CheckpointInMinIO = true
		}
	}
	// A checkpoint may land between the listing and the stop; resuming from
	// it is still resuming from the latest.
	obs.ResumedFromLatest = obs.ResumedFrom >= obs.LatestAtStop
	r.number("seconds from stop to resumed training", obs.RecoverySeconds, "s")
	r.number("checkpoints in MinIO", float64(len(obs.Checkpoints)), "")
	r.number("job duration", r.rec.Jobs[i].Seconds, "s")
	if !obs.CheckpointInMinIO {
		r.problem("training resumed from %q, which is not among the run's checkpoints in MinIO (%s)", obs.ResumedFrom, strings.Join(obs.Checkpoints, ", "))
	}
	if obs.ResumedOnNodeIP == obs.TrainingNodeIP {
		r.problem("training resumed on the stopped node %s", obs.TrainingNodeIP)
	}
	resumedOn := obs.ResumedContainer
	if resumedOn == "" {
		resumedOn = obs.ResumedOnNodeIP
	}
	r.rec.Observed = fmt.Sprintf("stopped %s at checkpoint %s; training resumed on %s from %s after %.0fs; job %s",
		obs.StoppedContainer, obs.LatestAtStop, resumedOn, obs.ResumedFrom, obs.RecoverySeconds, r.rec.Jobs[i].Status)
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

// poll reads job i's log every Poll until cond holds; a job that ends first
// is an error with its last log lines.
func (r *runner) poll(ctx context.Context, i int, cond func([]Event) (bool, error)) error {
	id := r.rec.Jobs[i].SubmissionID
	for {
		logs, err := r.env.Ray.Logs(ctx, id)
		if err != nil {
			return err
		}
		events, _ := ParseLog(logs)
		ok, err := cond(events)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		j, err := r.env.Ray.Job(ctx, id)
		if err != nil {
			return err
		}
		if j.Status.Terminal() {
			r.fill(ctx, i, j)
			return clierr.Hintf("open "+r.rec.Jobs[i].URL+" for the whole log",
				"job %s ended %s too early (%s); last log lines:\n%s", id, j.Status, j.Message, LastLines(logs, 50))
		}
		if err := sleep(ctx, r.o.Poll); err != nil {
			return err
		}
	}
}

func (r *runner) timeoutHint(err error, ctx context.Context, what string) error {
	if ctx.Err() != nil {
		return clierr.Hintf("look at the job in the dashboard ("+r.rec.Jobs[len(r.rec.Jobs)-1].URL+"); raise --checkpoint-timeout or --timeout if it is just slow",
			"%s: %w", what, ctx.Err())
	}
	return err
}

func runTune(ctx context.Context, r *runner) error {
	args := r.trainArgs("--mode", "tune", "--num-samples", fmt.Sprint(r.o.NumSamples),
		"--gpu-fraction", "0.5", "--cpus-per-worker", fmt.Sprint(r.cpus(4)))
	i, err := r.runJob(ctx, args, "/#/cluster")
	if err != nil {
		return err
	}
	jr := r.rec.Jobs[i]
	res := jr.Result
	if res == nil {
		return r.notObserved()
	}
	obs := &TuneObs{Samples: len(res.Trials), MaxT: res.MaxT, StoppedEarly: res.StoppedEarly,
		Completed: res.Completed, Errored: res.Errored, Best: res.Best, Trials: res.Trials}
	r.rec.Tune = obs
	r.number("trials", float64(obs.Samples), "")
	r.number("stopped early by ASHA", float64(obs.StoppedEarly), "")
	r.number("ran to max_t", float64(obs.Completed), "")
	r.number("job duration", jr.Seconds, "s")
	if obs.Best != nil && obs.Best.ValAccuracy != nil {
		r.number("best val accuracy", *obs.Best.ValAccuracy*100, "%")
	}
	if obs.Samples != r.o.NumSamples {
		r.problem("%d trials reported, %d asked for", obs.Samples, r.o.NumSamples)
	}
	if obs.StoppedEarly == 0 {
		r.problem("ASHA stopped no trial early (%d trials, max_t %d)", obs.Samples, obs.MaxT)
	}
	if obs.Completed == 0 {
		r.problem("no trial ran to max_t %d", obs.MaxT)
	}
	if obs.Best == nil {
		r.problem("no best configuration reported")
	}
	best := "none"
	if b := obs.Best; b != nil {
		best = fmt.Sprintf("batch size %v, dropout %.2f", b.BatchSize, deref(b.DropoutProbability))
		if b.ValAccuracy != nil {
			best += fmt.Sprintf(", val accuracy %.1f%%", *b.ValAccuracy*100)
		}
	}
	r.rec.Observed = fmt.Sprintf("%d trials: %d stopped early by ASHA, %d ran to max_t %d, %d errored; best: %s",
		obs.Samples, obs.StoppedEarly, obs.Completed, obs.MaxT, obs.Errored, best)
	if len(r.rec.Problems) > 0 {
		return r.notObserved()
	}
	return nil
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
