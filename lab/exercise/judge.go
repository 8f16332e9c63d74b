package exercise

import (
	"fmt"

	"github.com/mltrain/mltrain/internal/ray"
)

// The judges: each reads an exercise's record and says how it falls short
// of what the lesson expects. The run adds their verdict to its problems;
// `mltrain verify` passes the stored record through the same judge before
// its own checks against the live lab. A run's problems may hold more: what
// went wrong while it ran (a worker that would not start again).

// finished: the job SUCCEEDED and train.py reached its end without error.
func finished(jr JobRun) []string {
	switch {
	case jr.Status != ray.Succeeded:
		return []string{fmt.Sprintf("job %s ended %s: %s", jr.SubmissionID, jr.Status, jr.Message)}
	case jr.Result == nil:
		return []string{fmt.Sprintf("job %s has no %s line in its log: train.py did not reach its end", jr.SubmissionID, ResultMarker)}
	case !jr.Result.Succeeded():
		return []string{fmt.Sprintf("job %s: train.py reports failure: %s", jr.SubmissionID, jr.Result.Error)}
	}
	return nil
}

func noJob(rec Record) []string {
	return []string{fmt.Sprintf("exercise %s's record lists no job", rec.Exercise)}
}

func noObservation(rec Record) []string {
	return []string{fmt.Sprintf("exercise %s's record has no observation (recorded by an older mltrain?)", rec.Exercise)}
}

func judgeSubmit(rec Record) []string {
	jr, ok := rec.LastJob()
	if !ok {
		return noJob(rec)
	}
	return finished(jr)
}

func judgeInfeasible(rec Record) []string {
	obs := rec.Infeasible
	jr, ok := rec.LastJob()
	if obs == nil || !ok {
		return noObservation(rec)
	}
	var p []string
	if !obs.StayedPending {
		p = append(p, fmt.Sprintf("job %s left PENDING after %.0fs (Ray had it %s): a node could run a 2-GPU job", jr.SubmissionID, obs.PendingSeconds, jr.Status))
	}
	if obs.MaxGPUsPerNode >= 2 {
		who := "a node"
		if _, big := ray.MaxGPUsPerNode(obs.Nodes); big.NodeID != "" {
			who = fmt.Sprintf("node %s (%s)", big.NodeIP, big.NodeID)
		}
		p = append(p, fmt.Sprintf("%s has %.0f GPUs: a 2-GPU job is feasible on this cluster, so the lesson does not apply", who, obs.MaxGPUsPerNode))
	}
	if obs.Demand == nil {
		p = append(p, fmt.Sprintf("Ray's cluster status did not list job %s's {'GPU': 2.0} demand within %.0fs", jr.SubmissionID, obs.PendingSeconds))
	}
	if obs.StayedPending && !obs.Kept && !jr.Status.Terminal() {
		p = append(p, fmt.Sprintf("job %s was left %s: it holds a pending demand until Ray's start timeout fails it", jr.SubmissionID, jr.Status))
	}
	return p
}

func judgeMulti(rec Record) []string {
	jr, ok := rec.LastJob()
	if !ok {
		return noJob(rec)
	}
	p := finished(jr)
	if nodes := jr.trainingNodes(); len(nodes) < 2 {
		p = append(p, fmt.Sprintf("job %s's training workers ran on %d node(s) (%s), not on both worker nodes", jr.SubmissionID, len(nodes), orNone(nodes)))
	}
	return p
}

func judgeFractional(rec Record) []string {
	obs := rec.Fractional
	if obs == nil || len(rec.Jobs) < 3 {
		return []string{"exercise fractional's record has no observation of three jobs"}
	}
	var p []string
	for _, jr := range rec.Jobs { // the baseline alone, then the three
		p = append(p, finished(jr)...)
	}
	if obs.MaxConcurrent < 3 {
		p = append(p, fmt.Sprintf("at most %d of the three 0.5-GPU jobs trained at the same time (jobs by node: %s)", obs.MaxConcurrent, obs.ByNode()))
	}
	placed := 0
	for _, ids := range obs.JobsByNode {
		placed += len(ids)
	}
	// A job that reported no worker is a problem of the run already.
	if obs.SharedNode == "" && placed == 3 {
		p = append(p, fmt.Sprintf("no GPU ran two of the jobs at the same time (jobs by node: %s)", obs.ByNode()))
	}
	return p
}

func judgeFault(rec Record) []string {
	obs := rec.Fault
	jr, ok := rec.LastJob()
	if obs == nil || !ok {
		return noObservation(rec)
	}
	switch {
	case obs.StoppedContainer == "":
		return []string{fmt.Sprintf("no worker was stopped during job %s", jr.SubmissionID)}
	case !obs.RegisteredAtStop:
		// Ray may start over when the worker stops before its controller
		// registered a checkpoint (a record of an older mltrain, too).
		return []string{fmt.Sprintf("%s was stopped before Ray Train had registered a checkpoint of job %s: the record cannot show a resume from it",
			obs.StoppedContainer, jr.SubmissionID)}
	case obs.ResumedFrom == "":
		return []string{fmt.Sprintf("job %s did not resume from a checkpoint after %s was stopped", jr.SubmissionID, obs.StoppedContainer)}
	}
	var p []string
	switch {
	case !obs.ResumedFromReported:
		p = append(p, fmt.Sprintf("training resumed from %s, which Ray Train never reported registered (registered before the resume: %s)",
			obs.ResumedFrom, orNone(obs.Registered)))
	case !obs.ResumedFromLatest:
		p = append(p, fmt.Sprintf("training resumed from %s, older than %s, which Ray Train had registered before %s was stopped",
			obs.ResumedFrom, obs.LatestAtStop, obs.StoppedContainer))
	}
	if !obs.CheckpointInMinIO {
		p = append(p, fmt.Sprintf("training resumed from %s, which MinIO never listed from the stop until training resumed (run %s)", obs.ResumedFrom, obs.Run))
	}
	if resumedOnTheStoppedNode(*obs) {
		p = append(p, fmt.Sprintf("training resumed on the stopped node %s", obs.TrainingNodeIP))
	}
	return append(p, finished(jr)...)
}

// resumedOnTheStoppedNode compares nodes by id where train.py gave both:
// on the host network a host's nodes share its address.
func resumedOnTheStoppedNode(obs FaultObs) bool {
	if obs.ResumedOnNodeID != "" && obs.TrainingNodeID != "" {
		return obs.ResumedOnNodeID == obs.TrainingNodeID
	}
	return obs.ResumedOnNodeIP != "" && obs.ResumedOnNodeIP == obs.TrainingNodeIP
}

func judgeTune(rec Record) []string {
	jr, ok := rec.LastJob()
	if !ok {
		return noJob(rec)
	}
	p := finished(jr)
	obs := rec.Tune
	if obs == nil {
		if len(p) == 0 { // a job without a result has no trials to count
			p = noObservation(rec)
		}
		return p
	}
	switch {
	case !obs.EndsKnown:
		// An older train.py counted every trial shorter than max_t as
		// "stopped early", those Lightning's EarlyStopping ended included.
		p = append(p, fmt.Sprintf("cannot tell which of the %d shorter trials ASHA stopped: the train.py that ran is an older copy that does not say how each trial ended "+
			"(its count of trials stopped early holds those that ended on their own too); remove the workspace's train.py to get the current one (mltrain writes it again)",
			obs.Samples-obs.Completed-obs.Errored))
	case obs.StoppedByScheduler == 0:
		p = append(p, fmt.Sprintf("ASHA stopped none of the %d trials (%s)", obs.Samples, obs.Counts()))
	}
	if obs.Completed == 0 {
		p = append(p, fmt.Sprintf("no trial ran to max_t %d (%s)", obs.MaxT, obs.Counts()))
	}
	if obs.Best == nil {
		p = append(p, "no best configuration reported")
	}
	return p
}
