package exercise

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store/storetest"
)

func ckptEvent(epoch int, registered bool) string {
	return fmt.Sprintf(`MLTRAIN_EVENT {"event":"checkpoint","time":%d,"mode":"ray","rank":0,"epoch":%d,"checkpoint":"ray/run/checkpoint_epoch_%06d","name":"checkpoint_epoch_%06d","registered":%t}`+"\n",
		100+epoch, epoch, epoch, epoch, registered)
}

// On a Ray without get_all_reported_checkpoints train.py says
// "registered": false; a later report proves Ray took the earlier one.
func TestStopPointOnlyTrustsWhatRayHolds(t *testing.T) {
	events, _ := ParseLog(ckptEvent(0, false))
	_, ok := stopPoint(events)
	assert.False(t, ok, "an unconfirmed report alone is no stop point")

	events, _ = ParseLog(ckptEvent(0, false) + ckptEvent(1, false))
	cp, ok := stopPoint(events)
	require.True(t, ok)
	assert.Equal(t, "ray/run/checkpoint_epoch_000000", cp.Checkpoint)

	events, _ = ParseLog(ckptEvent(0, true) + ckptEvent(1, true))
	cp, ok = stopPoint(events)
	require.True(t, ok)
	assert.Equal(t, "ray/run/checkpoint_epoch_000001", cp.Checkpoint)
	require.NotNil(t, cp.Epoch)
	assert.Equal(t, 1, *cp.Epoch)
	assert.Equal(t, []string{"run/checkpoint_epoch_000000", "run/checkpoint_epoch_000001"}, registered(events, "ray"))
}

// Ray must resume from the newest checkpoint it had registered before the
// stop (or a newer one); an older one is a lesson not observed.
func TestJudgeResumeFromAnOlderCheckpoint(t *testing.T) {
	s3 := storetest.New(t)
	s3.MakeBucket("ray")
	for e := 0; e < 2; e++ {
		s3.Put("ray", fmt.Sprintf("run/checkpoint_epoch_%06d/checkpoint.ckpt", e), 10, time.Now())
	}
	r := &runner{env: Env{Store: s3.Client(t, storetest.AccessKey), Now: time.Now, Bucket: "ray"},
		rec: Record{Exercise: "fault", Jobs: []JobRun{{SubmissionID: "run", Status: "SUCCEEDED", Result: &Result{}}}}}
	f := &faultRun{r: r, bucket: "ray", prefix: "run/", obs: &FaultObs{Run: "run", TrainingNodeIP: "10.0.0.4",
		StoppedContainer: "ray-worker-1", LatestAtStop: "run/checkpoint_epoch_000001", RegisteredAtStop: true}}
	resume := `MLTRAIN_EVENT {"event":"resume","time":200,"mode":"ray","rank":0,"checkpoint":"ray/run/checkpoint_epoch_000000","epoch":1,"node_ip":"10.0.0.3"}` + "\n"
	events, _ := ParseLog(ckptEvent(0, true) + ckptEvent(1, true) + resume)
	res := EventsOf(events, "resume")[0]
	require.NoError(t, f.observeResume(context.Background(), res, events))
	assert.Equal(t, []string{"the restarted worker says run/checkpoint_epoch_000000 holds epoch 1; train.py reported it for epoch 0"}, r.rec.Problems,
		"the log's epochs are the run's to compare; the rest is the judge's")
	r.rec.Fault = f.obs
	assert.Equal(t, []string{"training resumed from run/checkpoint_epoch_000000, older than run/checkpoint_epoch_000001, which Ray Train had registered before ray-worker-1 was stopped"},
		judgeFault(r.rec))
	assert.True(t, f.obs.ResumedFromReported)
	assert.False(t, f.obs.ResumedFromLatest)
	assert.True(t, f.obs.CheckpointInMinIO)
}

// On the host network the workers share the host's address: a resume on
// the other worker is on another node, told apart by node id.
func TestJudgeTellsNodesAtOneAddressApartByID(t *testing.T) {
	obs := FaultObs{TrainingNodeIP: "10.52.0.7", TrainingNodeID: "w1", ResumedOnNodeIP: "10.52.0.7", ResumedOnNodeID: "w0"}
	assert.False(t, resumedOnTheStoppedNode(obs))
	obs.ResumedOnNodeID = "w1"
	assert.True(t, resumedOnTheStoppedNode(obs))
	obs.TrainingNodeID, obs.ResumedOnNodeID = "", "" // a train.py that names no node id: by address
	assert.True(t, resumedOnTheStoppedNode(obs))
	obs.ResumedOnNodeIP = "10.52.0.8"
	assert.False(t, resumedOnTheStoppedNode(obs))
}
