package exercise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/lab/exercise"
)

// A worker already stopped is started again, and the exercise waits until
// Ray lists its new node ALIVE, before it submits anything: it never stops
// the last running worker.
func TestFaultHealsAStoppedWorkerFirst(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP, w0IP)
	ctx := context.Background()
	require.NoError(t, f.env.Engine.ContainerStop(ctx, "ray-worker-0", time.Second)) // the student's `mltrain worker stop 0`
	rec, err := exercise.Run(ctx, f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	assert.Equal(t, []string{"ray-worker-0", "ray-worker-1"}, eng.CallsOf("start"), "the stopped worker first, the training one after the fault")
	assert.Equal(t, []string{"ray-worker-0", "ray-worker-1"}, eng.CallsOf("stop"), "the student's stop, then the exercise's")
	assert.Equal(t, "ray-worker-0", rec.Fault.ResumedContainer)
	said := said(f)
	assert.Contains(t, said, "ray-worker-0 is stopped: starting it again first")
	assert.Contains(t, said, "Ray lists ray-worker-0's new node")
}

// A stopped worker that cannot be started refuses the run with the command
// that brings it back; nothing is submitted or stopped.
func TestFaultRefusesWhenAStoppedWorkerWillNotStart(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP, w0IP)
	ctx := context.Background()
	require.NoError(t, f.env.Engine.ContainerStop(ctx, "ray-worker-0", time.Second))
	eng.StartFunc = func(name string) error {
		if name == "ray-worker-0" {
			return errors.New("no such device /dev/dri/renderD128")
		}
		return nil
	}
	rec, err := exercise.Run(ctx, f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ray-worker-0 is stopped and could not be started again")
	assert.Contains(t, clierr.Hint(err), "mltrain worker start 0")
	assert.Contains(t, clierr.Hint(err), "mltrain lab fault")
	assert.Equal(t, []string{"ray-worker-0"}, eng.CallsOf("stop"), "only the student's stop")
	assert.Empty(t, rec.Jobs, "nothing submitted")
}

// The stop is docker stop's: Ray lists the node DEAD at once ("received
// SIGTERM"), and the exercise says so, not that Ray waits for its checks.
func TestFaultSaysWhatRayShowsForTheStop(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP, w0IP)
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	said := said(f)
	assert.Contains(t, said, "stopping ray-worker-1 as `docker stop` does (SIGTERM)")
	assert.Contains(t, said, "Ray lists the node DEAD within about a second")
	var dead []ray.Node
	for _, n := range f.ray.Nodes() {
		if n.State == "DEAD" {
			dead = append(dead, n)
		}
	}
	require.Len(t, dead, 1, "the stopped worker's old node; its restart is a new node")
	assert.Equal(t, w1IP, dead[0].NodeIP)
	assert.Contains(t, dead[0].StateMessage, "received SIGTERM")
}

// With one ALIVE worker node there is nowhere to resume: the exercise
// refuses before it submits, and stops nothing.
func TestFaultRefusesWithOneWorkerNode(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP)
	f.opts.Timeout = 300 * time.Millisecond
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Ray lists 1 ALIVE worker node(s)")
	assert.Contains(t, said(f), "waiting up to 300ms for the others to register", "both worker containers run: it waited first")
	assert.Contains(t, clierr.Hint(err), "mltrain status")
	assert.Empty(t, eng.CallsOf("stop"))
	assert.Empty(t, rec.Jobs, "nothing submitted")
}

// A restarted worker whose raylet never joins (here: the engine starts the
// container, Ray lists no new node) refuses the run once the wait is over,
// with the command to try; the stale node Ray still lists ALIVE at the old
// address is not taken for it.
func TestFaultRefusesWhenARestartedWorkerNeverJoins(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, map[string]string{w1IP: "ray-worker-1"}, w1IP, w0IP) // worker 0's raylet is none of the engine's
	f.opts.Timeout = 500 * time.Millisecond
	ctx := context.Background()
	require.NoError(t, eng.ContainerStop(ctx, "ray-worker-0", time.Second)) // killed: Ray still lists its node ALIVE
	rec, err := exercise.Run(ctx, f.env, "fault", f.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "started ray-worker-0 again, but Ray listed no new ALIVE node of it within 500ms")
	assert.Contains(t, clierr.Hint(err), "mltrain worker start 0")
	assert.Equal(t, []string{"ray-worker-0"}, eng.CallsOf("stop"), "only the test's stop")
	assert.Empty(t, rec.Jobs, "nothing submitted")
}

// A worker container started moments ago (an interrupted run's cleanup, a
// restart) whose raylet has not registered yet is waited for, not taken
// for a missing worker: the exercise goes on once Ray lists its node.
func TestFaultWaitsForAWorkerThatIsStillRegistering(t *testing.T) {
	eng := labEngine()
	f := newFixture(t, eng)
	trainRun(f, eng, labWorkers, w1IP)
	e := f.env.Engine.(*rayEngine)
	spec := raymodel.NodeSpec{ID: "late0000", IP: w0IP, Total: raymodel.Resources{"CPU": 32, "GPU": 1}}
	e.names["ray-worker-0"], e.specs["ray-worker-0"], e.nodes["ray-worker-0"] = "ray-worker-0", spec, spec.ID
	if d, err := eng.ContainerInspect(context.Background(), "ray-worker-0"); err == nil {
		e.names[d.ID] = "ray-worker-0"
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		f.ray.Join(spec) // its raylet registers while the exercise waits
	}()
	rec, err := exercise.Run(context.Background(), f.env, "fault", f.opts)
	require.NoError(t, err, "%v", rec.Problems)
	assert.Contains(t, said(f), "Ray lists 1 ALIVE worker node(s) of 2 running worker containers: waiting up to")
	assert.Equal(t, "ray-worker-0", rec.Fault.ResumedContainer)
}
