package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/exercise"
)

var exerciseTitles = map[string]string{
	"submit":     "a single-GPU job SUCCEEDED",
	"infeasible": "a 2-GPU job stayed PENDING with its demand listed",
	"multi":      "a 2-worker Ray Train job SUCCEEDED on both workers",
	"fractional": "three 0.5-GPU jobs trained at the same time",
	"fault":      "training resumed from a registered MinIO checkpoint after a worker stop",
	"tune":       "a Tune run in which ASHA stopped trials early and others ran to max_t",
}

func exerciseSpecs() []spec {
	checks := map[string]func(context.Context, *env, exercise.Record) outcome{
		"submit": checkSubmit, "infeasible": checkInfeasible, "multi": checkMulti,
		"fractional": checkFractional, "fault": checkFault, "tune": checkTune,
	}
	var out []spec
	for _, name := range exercise.Names {
		fn := checks[name]
		out = append(out, spec{id: GroupExercises + "." + name, group: GroupExercises, title: exerciseTitles[name],
			run: func(ctx context.Context, e *env) outcome { return checkExercise(ctx, e, name, fn) }})
	}
	return out
}

func labFix(name string) string { return "mltrain lab " + name }

// checkExercise reads the exercise's record; a missing or failed one fails
// with the command that runs the exercise.
func checkExercise(ctx context.Context, e *env, name string, fn func(context.Context, *env, exercise.Record) outcome) outcome {
	recs, err := e.records()
	if err != nil {
		return failErr(err, labFix(name))
	}
	rec, ok := recs[name]
	if !ok {
		where := "the state dir"
		if e.d.StateDir != "" {
			where = e.d.StateDir.File(lab.RecordFile(name))
		}
		return fail(labFix(name), "exercise %s has not been run on this lab (no record at %s)", name, where)
	}
	if !rec.OK {
		why := rec.Error
		if len(rec.Problems) > 0 {
			why = strings.Join(rec.Problems, "; ")
		}
		return fail(labFix(name), "exercise %s ran %s but did not behave as expected: %s", name, when(rec.Finished), firstLine(why))
	}
	return fn(ctx, e, rec)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return "on " + t.Local().Format("2006-01-02 15:04")
}

// rayJob looks a recorded job up in Ray's job history.
func rayJob(e *env, name string, jr exercise.JobRun) (ray.Job, *outcome) {
	jobs, err := e.jobs()
	if err != nil {
		o := failErr(err, "mltrain status")
		return ray.Job{}, &o
	}
	j, ok := jobs[jr.SubmissionID]
	if !ok {
		o := fail(labFix(name), "job %s (recorded by exercise %s) is not in Ray's job history: the head was restarted since, or the record is from another lab",
			jr.SubmissionID, name)
		return ray.Job{}, &o
	}
	return j, nil
}

// succeeded checks a recorded job SUCCEEDED according to Ray itself.
func succeeded(e *env, name string, jr exercise.JobRun) (ray.Job, *outcome) {
	j, o := rayJob(e, name, jr)
	if o != nil {
		return j, o
	}
	if j.Status != ray.Succeeded {
		f := fail(labFix(name), "Ray has job %s %s (%s), not SUCCEEDED", jr.SubmissionID, j.Status, firstLine(j.Message))
		return j, &f
	}
	return j, nil
}

func lastJob(rec exercise.Record) (exercise.JobRun, bool) {
	if len(rec.Jobs) == 0 {
		return exercise.JobRun{}, false
	}
	return rec.Jobs[len(rec.Jobs)-1], true
}

func noJob(name string) outcome {
	return fail(labFix(name), "exercise %s's record lists no job", name)
}

func ranOn(jr exercise.JobRun) string {
	switch {
	case len(jr.Containers) > 0:
		return strings.Join(jr.Containers, " and ")
	case len(jr.NodeIPs) > 0:
		return "node " + strings.Join(jr.NodeIPs, " and ")
	}
	return "an unreported node"
}

func checkSubmit(_ context.Context, e *env, rec exercise.Record) outcome {
	jr, ok := lastJob(rec)
	if !ok {
		return noJob(rec.Exercise)
	}
	j, o := succeeded(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	return pass("Ray has job %s SUCCEEDED in %.0fs; it trained on %s", jr.SubmissionID, j.Duration().Seconds(), ranOn(jr))
}

func checkInfeasible(_ context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Infeasible
	jr, ok := lastJob(rec)
	if obs == nil || !ok {
		return fail(labFix(rec.Exercise), "exercise infeasible's record has no observation (recorded by an older mltrain?)")
	}
	if !obs.StayedPending {
		return fail(labFix(rec.Exercise), "job %s left PENDING after %.0fs: a node could run a 2-GPU job", jr.SubmissionID, obs.PendingSeconds)
	}
	if obs.Demand == nil {
		return fail(labFix(rec.Exercise), "job %s stayed PENDING, but Ray's cluster status never listed its {'GPU': 2.0} demand", jr.SubmissionID)
	}
	j, o := rayJob(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	if j.Status == ray.Running || j.Status == ray.Succeeded {
		return fail(labFix(rec.Exercise), "Ray has the 2-GPU job %s %s: it found resources for it after all", jr.SubmissionID, j.Status)
	}
	return pass("job %s stayed PENDING for %.0fs (%q); Ray listed the demand %q; at most %g GPU per alive node; Ray now has it %s",
		jr.SubmissionID, obs.PendingSeconds, firstLine(obs.JobMessage), strings.TrimSpace(obs.Demand.Line), obs.MaxGPUsPerNode, j.Status)
}

func checkMulti(_ context.Context, e *env, rec exercise.Record) outcome {
	jr, ok := lastJob(rec)
	if !ok {
		return noJob(rec.Exercise)
	}
	if len(jr.NodeIPs) < 2 {
		return fail(labFix(rec.Exercise), "job %s's training workers ran on %d node(s) (%s), not on two", jr.SubmissionID, len(jr.NodeIPs), orNone(jr.NodeIPs))
	}
	j, o := succeeded(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	return pass("Ray has job %s SUCCEEDED in %.0fs; its 2 training workers ran on %s", jr.SubmissionID, j.Duration().Seconds(), ranOn(jr))
}

func checkFractional(_ context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Fractional
	if obs == nil || len(rec.Jobs) < 3 {
		return fail(labFix(rec.Exercise), "exercise fractional's record has no observation of three jobs")
	}
	three := rec.Jobs[len(rec.Jobs)-3:]
	if obs.MaxConcurrent < 3 {
		return fail(labFix(rec.Exercise), "at most %d of the three 0.5-GPU jobs trained at the same time (jobs by node: %s)", obs.MaxConcurrent, byNode(obs.JobsByNode))
	}
	var ids []string
	for _, jr := range three {
		if _, o := succeeded(e, rec.Exercise, jr); o != nil {
			return *o
		}
		ids = append(ids, jr.SubmissionID)
	}
	return pass("3 jobs at 0.5 GPU trained at the same time (%s): makespan %.0fs vs %.0fs for one alone (%.2fx); %s; Ray has all 3 SUCCEEDED",
		strings.Join(ids, ", "), obs.MakespanSeconds, obs.AloneSeconds, obs.Ratio, byNode(obs.JobsByNode))
}

func byNode(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ran %d", k, len(m[k]))
	}
	if len(parts) == 0 {
		return "no node reported"
	}
	return strings.Join(parts, ", ")
}

func checkFault(ctx context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Fault
	jr, ok := lastJob(rec)
	if obs == nil || !ok {
		return fail(labFix(rec.Exercise), "exercise fault's record has no observation (recorded by an older mltrain?)")
	}
	switch {
	case obs.StoppedContainer == "":
		return fail(labFix(rec.Exercise), "no worker was stopped during job %s", jr.SubmissionID)
	case !obs.RegisteredAtStop:
		// Ray may start over when the worker stops before its controller
		// registered a checkpoint (a record of an older mltrain, too).
		return fail(labFix(rec.Exercise), "%s was stopped before Ray Train had registered a checkpoint of job %s: the record cannot show a resume from it",
			obs.StoppedContainer, jr.SubmissionID)
	case obs.ResumedFrom == "":
		return fail(labFix(rec.Exercise), "job %s did not resume from a checkpoint after %s was stopped", jr.SubmissionID, obs.StoppedContainer)
	case !obs.ResumedFromReported:
		return fail(labFix(rec.Exercise), "training resumed from %s, not one Ray Train had reported registered (%s)", obs.ResumedFrom, orNone(obs.Registered))
	case !obs.ResumedFromLatest:
		return fail(labFix(rec.Exercise), "training resumed from %s, older than %s, which Ray Train had registered before the stop", obs.ResumedFrom, obs.LatestAtStop)
	case !obs.CheckpointInMinIO:
		return fail(labFix(rec.Exercise), "training resumed from %s, but MinIO did not list it when training resumed", obs.ResumedFrom)
	case obs.ResumedOnNodeIP != "" && obs.ResumedOnNodeIP == obs.TrainingNodeIP:
		return fail(labFix(rec.Exercise), "training resumed on the stopped node %s", obs.TrainingNodeIP)
	}
	if _, o := succeeded(e, rec.Exercise, jr); o != nil {
		return *o
	}
	if e.d.MinIO == nil {
		return fail("report this as an mltrain bug", "no MinIO client configured")
	}
	if o := e.minioReachable(ctx); o != nil {
		return *o
	}
	s, err := e.d.MinIO(e.d.Creds.MinIOAccessKey, e.d.Creds.MinIOSecretKey)
	if err != nil {
		return failErr(err, "mltrain status")
	}
	run := obs.Run
	if run == "" {
		run = jr.SubmissionID
	}
	cps, err := s.ListCheckpoints(ctx, store.DefaultBucket, run+"/")
	if err != nil {
		return failErr(err, "mltrain status")
	}
	// The resumed checkpoint was in MinIO when training resumed (the
	// record); train.py's retention (the newest 2) may have deleted it since.
	if len(cps) == 0 {
		return fail(labFix(rec.Exercise), "MinIO holds no checkpoint of run %s now (s3://%s/%s/): the run's checkpoints were deleted", run, store.DefaultBucket, run)
	}
	now := "still there"
	found := false
	for _, cp := range cps {
		found = found || cp.Path == obs.ResumedFrom
	}
	if !found {
		now = "retention has deleted it since"
	}
	resumedOn := obs.ResumedContainer
	if resumedOn == "" {
		resumedOn = obs.ResumedOnNodeIP
	}
	return pass("stopped %s; training resumed on %s from s3://%s/%s, registered before the stop; MinIO held it then (%s; %d checkpoints of the run now), after %.0fs; Ray has job %s SUCCEEDED",
		obs.StoppedContainer, resumedOn, store.DefaultBucket, obs.ResumedFrom, now, len(cps), obs.RecoverySeconds, jr.SubmissionID)
}

func checkTune(_ context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Tune
	jr, ok := lastJob(rec)
	if obs == nil || !ok {
		return fail(labFix(rec.Exercise), "exercise tune's record has no observation (recorded by an older mltrain?)")
	}
	if !obs.EndsKnown {
		// Older records counted every trial shorter than max_t, those
		// Lightning's EarlyStopping ended included.
		return fail(labFix(rec.Exercise), "the record cannot tell which of the %d shorter trials ASHA stopped (recorded by an older mltrain or train.py)",
			obs.Samples-obs.Completed-obs.Errored)
	}
	counts := fmt.Sprintf("%d stopped by ASHA, %d ran to max_t %d, %d ended by the script before max_t, %d errored",
		obs.StoppedByScheduler, obs.Completed, obs.MaxT, obs.EndedByScript, obs.Errored)
	if obs.StoppedByScheduler == 0 {
		return fail(labFix(rec.Exercise), "ASHA stopped none of the %d trials (%s)", obs.Samples, counts)
	}
	if obs.Completed == 0 {
		return fail(labFix(rec.Exercise), "no trial ran to max_t %d (%s)", obs.MaxT, counts)
	}
	if _, o := succeeded(e, rec.Exercise, jr); o != nil {
		return *o
	}
	return pass("%d trials: %s; Ray has job %s SUCCEEDED", obs.Samples, counts, jr.SubmissionID)
}
