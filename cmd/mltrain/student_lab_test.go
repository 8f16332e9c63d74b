package main

// The student's lab as one piece, on the real engine, through the built
// mltrain: up -> data food11 -> lab all -> verify -> down. The stand-in Ray
// in the containers runs the jobs (internal/ray/raymodel: train.py's
// contract, checkpoints in the lab's MinIO, a stopped worker's node going
// DEAD); only its timings are shortened, through the environment variables
// a Ray node reads.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/verify"
)

// studentLabOverride shortens the model's timings: a silent node is DEAD
// after 5 s (Ray: 15 s to about a minute), one epoch takes 500 ms.
const studentLabOverride = "services:\n  ray-head:\n    environment:\n" +
	"      STANDIN_RAY_DEAD_AFTER: 5s\n      STANDIN_TRAIN_EPOCH: 500ms\n"

// rehearsalSkips are the checks a CPU rehearsal cannot run: no GPU
// plumbing, no GPUs in the workers.
var rehearsalSkips = map[string]bool{"host.plumbing": true, "gpu.visible": true}

// studentLabArgs is the student's rehearsal: every exercise, a few batches,
// random images; the infeasible job watched 5 s (not 30), polled twice a
// second.
func studentLabArgs(s *standin) []string {
	return append([]string{"lab", "all", "--quick", "--fake-data", "--observe", "5s", "--poll", "500ms"}, s.lab()...)
}

// runLong is runBin for a command that takes minutes (lab all).
func runLong(t *testing.T, s *standin, limit time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(mltrainBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), s.env...)
	return runToExit(t, cmd, limit, args)
}

// verifyAll runs `mltrain verify --json` until it exits 0 (health checks and
// Prometheus's first scrape come seconds after up) or the wait ends; it
// returns the last report and exit status.
func verifyAll(t *testing.T, s *standin, wait time.Duration) (verify.Report, int) {
	t.Helper()
	var rep verify.Report
	code := -1
	deadline := time.Now().Add(wait)
	for {
		stdout, stderr, c := runBin(t, binRun{args: append([]string{"verify", "--json"}, s.lab()...), env: s.env})
		rep, code = verify.Report{}, c
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "verify --json: %s\n%s", stdout, stderr)
		if code == 0 || time.Now().After(deadline) {
			return rep, code
		}
		time.Sleep(2 * time.Second)
	}
}

// requireAllPass asserts every check passed, except what a CPU rehearsal
// skips, and that every exercise's check is among them.
func requireAllPass(t *testing.T, rep verify.Report, code int) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range rep.Checks {
		seen[c.ID] = true
		want := verify.Pass
		if rehearsalSkips[c.ID] {
			want = verify.Skip
		}
		assert.Equal(t, want, c.Status, "%s: %s (fix: %s)", c.ID, c.Evidence, c.Fix)
	}
	for _, name := range exercise.Names() {
		assert.True(t, seen["exercises."+name], "verify checks exercise %s", name)
	}
	assert.True(t, seen["data.food11"], "verify checks the dataset")
	assert.Equal(t, 0, code, "verify exits 0 when every check passed")
}

// The student's path at the host's own sizing, as a student runs it: no
// --head-cpus or --worker-cpus (on the 2-core CI host each worker has one
// CPU), no --cpus: every exercise fits its requests to the workers, says
// so, and verify shows the passes as earned under those conditions.
func TestStudentLabOnTheEngine(t *testing.T) {
	s := newStandin(t)
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(s.stateDir).File(compose.OverrideFile), []byte(studentLabOverride), 0o600))

	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)

	data := append([]string{"data", "food11", "--zip", canonicalZip(t), "--volume", s.opts.DataVolume}, s.lab()...)
	stdout, stderr, code := runBin(t, binRun{args: data, env: s.env})
	require.Equal(t, 0, code, "data food11: %s", stderr)
	assert.Contains(t, stdout, "16643 images")

	stdout, stderr, code = runLong(t, s, 12*time.Minute, studentLabArgs(s)...)
	require.Equal(t, 0, code, "lab all:\n%s\n%s", stdout, stderr)
	assert.Regexp(t, `6 of 6 passed in \S+ \(under conditions: quick, fake data, CPUs fitted to the lab, CPU rehearsal\)\n$`, stdout, "lab all ends with its summary")
	assert.Contains(t, stdout, "CPUs asked by the course; this lab's workers have 1", "the exercises say how they fitted their requests")
	for _, name := range exercise.Names() {
		rec, err := exercise.LoadRecord(state.Dir(s.stateDir), name)
		require.NoError(t, err, name)
		assert.True(t, rec.OK, "%s: %v", name, rec.Problems)
	}

	rep, code := verifyAll(t, s, 90*time.Second)
	requireAllPass(t, rep, code)
	for _, c := range rep.Checks {
		if c.Group == verify.GroupExercises {
			assert.Contains(t, c.Conditions, "quick", c.ID)
			assert.Contains(t, c.Conditions, "CPU rehearsal", c.ID)
		}
	}
	assert.Equal(t, len(exercise.Names()), rep.Conditional, "every exercise's pass is marked as a rehearsal's")

	_, stderr, code = runBin(t, binRun{args: append([]string{"down"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "down: %s", stderr)
	assert.Empty(t, s.containers(t), "down removes the lab's containers")
	_, err := s.eng.VolumeInspect(context.Background(), s.opts.DataVolume)
	assert.NoError(t, err, "down keeps the dataset volume %s", s.opts.DataVolume)
}
