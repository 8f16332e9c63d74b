package exercise

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// normCheckpoint turns Ray's checkpoint path ("ray/run/checkpoint_…" or
// "s3://ray/run/checkpoint_…") into the bucket-relative path the store lists.
func normCheckpoint(p, bucket string) string {
	p = strings.TrimPrefix(p, "s3://")
	p = strings.TrimPrefix(p, bucket+"/")
	return strings.TrimRight(p, "/")
}

// registeredEvents are the "checkpoint" events that prove Ray Train holds
// the checkpoint, in log order: registered ones; and on a Ray without
// get_all_reported_checkpoints (registered false) every one but the
// newest, since rank 0 reports again only after Ray took the previous report.
func registeredEvents(events []Event) []Event {
	cps := EventsOf(events, "checkpoint")
	var out []Event
	for k, e := range cps {
		if e.Checkpoint != "" && (e.Registered || k < len(cps)-1) {
			out = append(out, e)
		}
	}
	return out
}

// stopPoint is the newest checkpoint Ray Train is known to hold.
func stopPoint(events []Event) (Event, bool) {
	reg := registeredEvents(events)
	if len(reg) == 0 {
		return Event{}, false
	}
	return reg[len(reg)-1], true
}

// registered lists the bucket-relative paths of registeredEvents, once each.
func registered(events []Event, bucket string) []string {
	var out []string
	for _, e := range registeredEvents(events) {
		if p := normCheckpoint(e.Checkpoint, bucket); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// epochOf is the epoch the checkpoint event for path gave, or nil.
func epochOf(events []Event, path, bucket string) *int {
	for _, e := range registeredEvents(events) {
		if normCheckpoint(e.Checkpoint, bucket) == path {
			return e.Epoch
		}
	}
	return nil
}

// listed is MinIO's listing of the run's checkpoints, as a set.
func (f *faultRun) listed(ctx context.Context) (map[string]bool, error) {
	cps, err := f.r.env.Store.ListCheckpoints(ctx, f.bucket, f.prefix)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, cp := range cps {
		out[cp.Path] = true
	}
	return out, nil
}

// observeResume records the resume beside what train.py reported before it
// and what MinIO held: judgeFault then asks for a checkpoint Ray Train had
// registered, the one registered last before the stop or a newer one, on
// another node, that MinIO held (then: retention may delete it later).
func (f *faultRun) observeResume(ctx context.Context, resume Event, events []Event) error {
	r, obs := f.r, f.obs
	obs.ResumedFrom = normCheckpoint(resume.Checkpoint, f.bucket)
	obs.ResumedEpoch = resume.Epoch
	obs.ResumedOnNodeIP, obs.ResumedOnNodeID = resume.NodeIP, resume.NodeID
	if rc, err := r.workerOfNode(ctx, resume.NodeID, resume.NodeIP); err == nil {
		obs.ResumedContainer = rc.Name
	}
	var before []Event // the log up to the resume line
	for _, e := range events {
		if e.Event == "resume" && e.Time == resume.Time && e.Checkpoint == resume.Checkpoint {
			break
		}
		before = append(before, e)
	}
	obs.Registered = registered(before, f.bucket)
	obs.ResumedFromReported = slices.Contains(obs.Registered, obs.ResumedFrom)
	// Names sort in epoch order (checkpoint_epoch_EEEEEE).
	obs.ResumedFromLatest = obs.ResumedFromReported && obs.ResumedFrom >= obs.LatestAtStop
	listed, err := f.listed(ctx)
	if err != nil {
		return err
	}
	obs.CheckpointInMinIO = listed[obs.ResumedFrom] || f.inMinIO[obs.ResumedFrom]
	r.say("resumed on %s from %s after %.0fs", resume.NodeIP, obs.ResumedFrom, obs.RecoverySeconds)

	// The epoch train.py gave each checkpoint is in the log, not the record.
	if want := epochOf(before, obs.ResumedFrom, f.bucket); want != nil && resume.Epoch != nil && *want != *resume.Epoch {
		r.problem("the restarted worker says %s holds epoch %d; train.py reported it for epoch %d", obs.ResumedFrom, *resume.Epoch, *want)
	}
	return nil
}

// conclude lists what MinIO holds at the end, records the numbers and says
// what was observed.
func (f *faultRun) conclude(ctx context.Context) error {
	r, obs := f.r, f.obs
	after, err := r.env.Store.ListCheckpoints(ctx, f.bucket, f.prefix)
	if err != nil {
		return err
	}
	obs.Checkpoints = nil
	for _, cp := range after {
		obs.Checkpoints = append(obs.Checkpoints, cp.Path)
	}
	r.number("seconds from stop to resumed training", obs.RecoverySeconds, "s")
	r.number("checkpoints registered before the resume", float64(len(obs.Registered)), "")
	r.number("checkpoints in MinIO at the end", float64(len(obs.Checkpoints)), "")
	r.number("job duration", r.rec.Jobs[f.i].Seconds, "s")
	from := obs.ResumedFrom
	if e := obs.ResumedEpoch; e != nil {
		from += fmt.Sprintf(" (epoch %d, training went on at epoch %d)", *e, *e+1)
	}
	r.rec.Observed = fmt.Sprintf("stopped %s once Ray Train had registered checkpoint %s; training resumed on %s from %s after %.0fs; job %s",
		obs.StoppedContainer, obs.LatestAtStop, obs.ResumedOn(), from, obs.RecoverySeconds, r.rec.Jobs[f.i].Status)
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
