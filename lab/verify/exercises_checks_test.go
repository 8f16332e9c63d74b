package verify

import (
	"errors"
	"testing"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/exercise"
)

func setRec(f *fixture, name string, fn func(r *exercise.Record)) {
	r := f.recs[name]
	fn(&r)
	f.recs[name] = r
}

func setJob(f *fixture, id string, st ray.JobStatus) {
	for i := range f.ray.jobs {
		if f.ray.jobs[i].SubmissionID == id {
			f.ray.jobs[i].Status = st
			f.ray.jobs[i].Message = "Job failed."
		}
	}
}

func TestExerciseChecks(t *testing.T) {
	runFailures(t, []failure{
		{name: "never run", id: "exercises.tune", break_: func(f *fixture) { delete(f.recs, "tune") },
			evidence: "exercise tune has not been run on this lab", fix: "mltrain lab tune"},
		{name: "ran badly", id: "exercises.multi", break_: func(f *fixture) {
			setRec(f, "multi", func(r *exercise.Record) { r.OK, r.Problems = false, []string{"the training workers ran on 1 node(s)"} })
		}, evidence: "did not behave as expected: the training workers ran on 1 node(s)", fix: "mltrain lab multi"},
		{name: "records unreadable", id: "exercises.submit", break_: func(f *fixture) {
			f.deps.Records = func() (map[string]exercise.Record, error) { return nil, errors.New("exercise submit record: bad JSON") }
		}, evidence: "bad JSON", fix: "mltrain lab submit"},
		{name: "job not in ray history", id: "exercises.submit", break_: func(f *fixture) {
			f.ray.jobs = f.ray.jobs[1:]
		}, evidence: "job sub-1 (recorded by exercise submit) is not in Ray's job history", fix: "mltrain lab submit"},
		{name: "ray jobs unreachable", id: "exercises.submit", break_: func(f *fixture) {
			f.ray.jobsErr = errors.New("list jobs: boom")
		}, evidence: "boom"},
		{name: "ray says failed", id: "exercises.submit", break_: func(f *fixture) { setJob(f, "sub-1", ray.Failed) },
			evidence: "Ray has job sub-1 FAILED (Job failed.), not SUCCEEDED"},
		{name: "infeasible ran after all", id: "exercises.infeasible", break_: func(f *fixture) { setJob(f, "inf-1", ray.Succeeded) },
			evidence: "found resources for it after all"},
		{name: "infeasible without demand", id: "exercises.infeasible", break_: func(f *fixture) {
			setRec(f, "infeasible", func(r *exercise.Record) { r.Infeasible.Demand = nil })
		}, evidence: "did not list job inf-1's {'GPU': 2.0} demand"},
		{name: "infeasible left pending", id: "exercises.infeasible", break_: func(f *fixture) {
			setRec(f, "infeasible", func(r *exercise.Record) { r.Infeasible.StayedPending = false })
		}, evidence: "left PENDING after 30s"},
		{name: "multi on one node", id: "exercises.multi", break_: func(f *fixture) {
			setRec(f, "multi", func(r *exercise.Record) { r.Jobs[0].NodeIPs = []string{w0IP} })
		}, evidence: "ran on 1 node(s)"},
		{name: "fractional not all at once", id: "exercises.fractional", break_: func(f *fixture) {
			setRec(f, "fractional", func(r *exercise.Record) { r.Fractional.MaxConcurrent = 2 })
		}, evidence: "at most 2 of the three 0.5-GPU jobs trained at the same time"},
		{name: "fractional job failed", id: "exercises.fractional", break_: func(f *fixture) { setJob(f, "frac-2", ray.Failed) },
			evidence: "Ray has job frac-2 FAILED"},
		{name: "fractional passes", id: "exercises.fractional", status: Pass, break_: func(*fixture) {},
			evidence: "3 jobs at 0.5 GPU trained at the same time (frac-1, frac-2, frac-3)"},
		{name: "fault passes after retention deleted the resumed checkpoint", id: "exercises.fault", status: Pass, break_: func(*fixture) {},
			evidence: "from s3://ray/fault-run/checkpoint_epoch_000001, registered before the stop; MinIO held it then"},
		{name: "fault stopped before a registered checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.RegisteredAtStop = false })
		}, evidence: "ray-worker-0 was stopped before Ray Train had registered a checkpoint"},
		{name: "fault resumed from an unreported checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedFromReported = false })
		}, evidence: "which Ray Train never reported registered"},
		{name: "fault resumed from an older checkpoint", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) {
				r.Fault.ResumedFrom, r.Fault.ResumedFromLatest = "fault-run/checkpoint_epoch_000000", false
			})
		}, evidence: "older than fault-run/checkpoint_epoch_000001"},
		{name: "fault checkpoint never in minio", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.CheckpointInMinIO = false })
		}, evidence: "MinIO never listed from the stop until training resumed"},
		{name: "fault run has no checkpoint in minio now", id: "exercises.fault", break_: func(f *fixture) {
			f.s3.Delete("ray", "fault-run/checkpoint_epoch_000008/checkpoint.ckpt")
			f.s3.Delete("ray", "fault-run/checkpoint_epoch_000009/checkpoint.ckpt")
		}, evidence: "MinIO holds no checkpoint of run fault-run now"},
		{name: "fault resumed on the stopped node", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedOnNodeIP = w0IP })
		}, evidence: "resumed on the stopped node"},
		{name: "fault never resumed", id: "exercises.fault", break_: func(f *fixture) {
			setRec(f, "fault", func(r *exercise.Record) { r.Fault.ResumedFrom = "" })
		}, evidence: "did not resume from a checkpoint"},
		{name: "tune passes with trials the script ended", id: "exercises.tune", status: Pass, break_: func(*fixture) {},
			evidence: "8 trials: 3 stopped by ASHA, 3 ran to max_t 4, 2 ended by the script before max_t"},
		{name: "tune stopped none early", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) {
				r.Tune.StoppedByScheduler, r.Tune.StoppedEarly, r.Tune.EndedByScript = 0, 0, 5
			})
		}, evidence: "ASHA stopped none of the 8 trials (0 stopped by ASHA, 3 ran to max_t 4, 5 ended by the script before max_t"},
		{name: "tune record that cannot tell ASHA's stops", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) {
				r.Tune.EndsKnown, r.Tune.StoppedByScheduler, r.Tune.EndedByScript, r.Tune.StoppedEarly = false, 0, 0, 5
			})
		}, evidence: "cannot tell which of the 5 shorter trials ASHA stopped"},
		{name: "tune none completed", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) { r.Tune.Completed = 0 })
		}, evidence: "no trial ran to max_t 4"},
		{name: "tune old record", id: "exercises.tune", break_: func(f *fixture) {
			setRec(f, "tune", func(r *exercise.Record) { r.Tune = nil })
		}, evidence: "has no observation"},
	})
}
