package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/state"
)

// The lease end through the built binary on a stand-in lab: up records it,
// bare re-ups keep it, 'mltrain lease' corrects it on the running lab, and
// from 30 minutes before the end every command, up too, prints the backup
// line while status shows the time left.
func TestTheLeaseSurvivesReUpsOnTheStandinLab(t *testing.T) {
	s := newStandin(t)
	dir := state.Dir(s.stateDir)
	before := time.Now()
	_, stderr, code := runBin(t, binRun{args: s.upArgs("--lease-end", "+2h50m"), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)
	end := dir.LeaseEnd()
	assert.WithinRange(t, end, before.Add(170*time.Minute-time.Second), time.Now().Add(170*time.Minute))
	assert.NotContains(t, stderr, "lease ends in", "hours left: no reminder")

	_, stderr, code = runBin(t, binRun{args: append([]string{"up"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "bare up: %s", stderr)
	assert.NotContains(t, stderr, "changed:")
	assert.Equal(t, end, dir.LeaseEnd(), "a bare re-up keeps the lease end")

	stdout, stderr, code := runBin(t, binRun{args: append(s.lab(), "lease", "+20m"), env: s.env})
	require.Equal(t, 0, code, "lease: %s", stderr)
	assert.Contains(t, stdout, "the lease ends in 20m")
	corrected := dir.LeaseEnd()
	assert.WithinDuration(t, time.Now().Add(20*time.Minute), corrected, time.Minute)

	_, stderr, code = runBin(t, binRun{args: append([]string{"up"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "bare up: %s", stderr)
	assert.Equal(t, corrected, dir.LeaseEnd(), "the corrected end survives the re-up")
	assert.Regexp(t, `lease ends in (1\d|20)m \(\d\d:\d\d UTC\): save your work now: mltrain --project `+s.project+` --state-dir \S+ backup ~/lab-backup.tar.gz`, stderr)

	stdout, _, code = runBin(t, binRun{args: append([]string{"status"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, stdout)
	assert.Regexp(t, `Lease: ends in (1\d|20)m \(\d\d:\d\d UTC\); back up before it: 'mltrain --project `+s.project, stdout)
}
