package verify

import (
	"context"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/state"
)

// exerciseSpecs are one check per exercise of the registry: the exercise's
// own Judge on its stored record, then what only the live lab can tell.
func exerciseSpecs() []spec {
	var out []spec
	for _, ex := range exercise.Exercises() {
		out = append(out, spec{id: GroupExercises + "." + ex.Name, group: GroupExercises, title: ex.Proves,
			run: func(ctx context.Context, e *env) outcome { return checkExercise(ctx, e, ex) }})
	}
	return out
}

// liveChecks read what the record cannot show, in Ray's job history and
// MinIO, once the exercise's judge has accepted the record; by exercise.
var liveChecks = map[string]func(context.Context, *env, exercise.Record) outcome{
	"submit": liveSubmit, "infeasible": liveInfeasible, "multi": liveMulti,
	"fractional": liveFractional, "fault": liveFault, "tune": liveTune,
}

func (e *env) labFix(name string) string { return e.cmd("lab", name) }

// checkExercise reads the exercise's record; a missing or failed one fails
// with the command that runs the exercise, and so does one the exercise's
// judge finds wanting (a record of an older mltrain).
func checkExercise(ctx context.Context, e *env, ex exercise.Exercise) outcome {
	name := ex.Name
	recs, err := e.records()
	if err != nil {
		return failErr(err, e.labFix(name))
	}
	rec, ok := recs[name]
	if !ok {
		where := "the state dir"
		if e.d.StateDir != "" {
			where = e.d.StateDir.File(state.RecordFile(name))
		}
		return fail(e.labFix(name), "exercise %s has not been run on this lab (no record at %s)", name, where)
	}
	if !rec.OK {
		why := rec.Error
		if len(rec.Problems) > 0 {
			why = strings.Join(rec.Problems, "; ")
		}
		return fail(e.labFix(name), "exercise %s ran %s but did not behave as expected: %s", name, when(rec.Finished), firstLine(why))
	}
	if problems := ex.Judge(rec); len(problems) > 0 {
		return fail(e.labFix(name), "%s", strings.Join(problems, "; "))
	}
	live, ok := liveChecks[name]
	if !ok {
		return fail("report this as an mltrain bug", "verify has no live check for exercise %s", name)
	}
	out := live(ctx, e, rec)
	out.conditions = rec.Conditions()
	return out
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
		o := failErr(err, e.cmd("status"))
		return ray.Job{}, &o
	}
	j, ok := jobs[jr.SubmissionID]
	if !ok {
		o := fail(e.labFix(name), "job %s (recorded by exercise %s) is not in Ray's job history: the head was restarted since, or the record is from another lab",
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
		f := fail(e.labFix(name), "Ray has job %s %s (%s), not SUCCEEDED", jr.SubmissionID, j.Status, firstLine(j.Message))
		return j, &f
	}
	return j, nil
}

// The live checks run on a record the judge accepted: it has its jobs and
// its observation.

func liveSubmit(_ context.Context, e *env, rec exercise.Record) outcome {
	jr, _ := rec.LastJob()
	j, o := succeeded(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	return pass("Ray has job %s SUCCEEDED in %.0fs; it trained on %s", jr.SubmissionID, j.Duration().Seconds(), jr.Where())
}

func liveInfeasible(_ context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Infeasible
	jr, _ := rec.LastJob()
	j, o := rayJob(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	if j.Status == ray.Running || j.Status == ray.Succeeded {
		return fail(e.labFix(rec.Exercise), "Ray has the 2-GPU job %s %s: it found resources for it after all", jr.SubmissionID, j.Status)
	}
	return pass("job %s stayed PENDING for %.0fs (%q); Ray listed the demand %q; at most %g GPU per alive node; Ray now has it %s",
		jr.SubmissionID, obs.PendingSeconds, firstLine(obs.JobMessage), strings.TrimSpace(obs.Demand.Line), obs.MaxGPUsPerNode, j.Status)
}

func liveMulti(_ context.Context, e *env, rec exercise.Record) outcome {
	jr, _ := rec.LastJob()
	j, o := succeeded(e, rec.Exercise, jr)
	if o != nil {
		return *o
	}
	return pass("Ray has job %s SUCCEEDED in %.0fs; its 2 training workers ran on %s", jr.SubmissionID, j.Duration().Seconds(), jr.Where())
}

func liveFractional(_ context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Fractional
	var ids []string
	for _, jr := range rec.Jobs[len(rec.Jobs)-3:] {
		if _, o := succeeded(e, rec.Exercise, jr); o != nil {
			return *o
		}
		ids = append(ids, jr.SubmissionID)
	}
	return pass("3 jobs at 0.5 GPU trained at the same time (%s): makespan %.0fs vs %.0fs for one alone (%.2fx); %s; Ray has all 3 SUCCEEDED",
		strings.Join(ids, ", "), obs.MakespanSeconds, obs.AloneSeconds, obs.Ratio, obs.ByNode())
}

// liveFault asks Ray for the job and MinIO for the run's checkpoints now.
func liveFault(ctx context.Context, e *env, rec exercise.Record) outcome {
	obs := rec.Fault
	jr, _ := rec.LastJob()
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
		return failErr(err, e.cmd("status"))
	}
	run := obs.Run
	if run == "" {
		run = jr.SubmissionID
	}
	cps, err := s.ListCheckpoints(ctx, store.DefaultBucket, run+"/")
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	// The resumed checkpoint was in MinIO when training resumed (the
	// record); train.py's retention (the newest 2) may have deleted it since.
	if len(cps) == 0 {
		return fail(e.labFix(rec.Exercise), "MinIO holds no checkpoint of run %s now (s3://%s/%s/): the run's checkpoints were deleted", run, store.DefaultBucket, run)
	}
	now := "still there"
	found := false
	for _, cp := range cps {
		found = found || cp.Path == obs.ResumedFrom
	}
	if !found {
		now = "retention has deleted it since"
	}
	return pass("stopped %s; training resumed on %s from s3://%s/%s, registered before the stop; MinIO held it then (%s; %d checkpoints of the run now), after %.0fs; Ray has job %s SUCCEEDED",
		obs.StoppedContainer, obs.ResumedOn(), store.DefaultBucket, obs.ResumedFrom, now, len(cps), obs.RecoverySeconds, jr.SubmissionID)
}

func liveTune(_ context.Context, e *env, rec exercise.Record) outcome {
	jr, _ := rec.LastJob()
	if _, o := succeeded(e, rec.Exercise, jr); o != nil {
		return *o
	}
	return pass("%d trials: %s; Ray has job %s SUCCEEDED", rec.Tune.Samples, rec.Tune.Counts(), jr.SubmissionID)
}
