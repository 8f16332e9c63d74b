package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// leaseEnd is the lease end of these tests; each sets its own clock.
var leaseEnd = time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)

// leaseCLI runs the CLI in-process at now, with the fake engine.
func leaseCLI(t *testing.T, now time.Time, eng docker.Engine, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	a.now = func() time.Time { return now }
	a.connect = func(context.Context) (docker.Engine, error) { return eng, nil }
	root := a.root()
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// leaseLab is a lab's state dir as up leaves it, its lease ending at end
// (none when zero), and the flags that name it.
func leaseLab(t *testing.T, end time.Time) (state.Dir, []string) {
	t.Helper()
	dir := state.Dir(t.TempDir())
	ch := plan.Choices{Options: plan.Options{Project: "leaselab", Workers: 3}.WithDefaults(), LeaseEnd: end}
	require.NoError(t, dir.SaveState(state.State{Project: "leaselab", UpAt: leaseEnd.Add(-3 * time.Hour), Choices: &ch}))
	return dir, []string{"--project", "leaselab", "--state-dir", dir.Path()}
}

func TestBadLeaseEndIsAUsageErrorNamingTheValueAndTheCommandAgain(t *testing.T) {
	dir, lab := leaseLab(t, time.Time{})
	now := leaseEnd.Add(-3 * time.Hour)
	flags := "mltrain --project leaselab --state-dir " + dir.Path()

	_, _, err := leaseCLI(t, now, fake.New(), append(lab, "up", "--workers", "2", "--lease-end", "tomorrow")...)
	require.Error(t, err)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), `--lease-end: lease end "tomorrow" is neither an RFC 3339 time (such as 2026-11-29T17:00:00Z) nor a duration from now (such as +2h50m)`)
	assert.Equal(t, "give when the node's lease ends, e.g. '"+flags+" up --lease-end +2h50m --workers 2'", clierr.Hint(err))

	_, _, err = leaseCLI(t, now, fake.New(), append(lab, "lease", "0s")...)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), `lease end "0s": the duration from now must be positive`)
	assert.Equal(t, "give when the node's lease ends, e.g. '"+flags+" lease +2h50m'", clierr.Hint(err))

	_, _, err = leaseCLI(t, now, fake.New(), append(lab, "lease", "+1h", "--clear")...)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), "give TIME or --clear, not both")
	assert.True(t, dir.LeaseEnd().IsZero(), "nothing recorded by a refused command")
}

func TestLeaseSetsShowsAndClearsTheLeaseOnARunningLab(t *testing.T) {
	dir, lab := leaseLab(t, time.Time{})
	now := leaseEnd.Add(-2*time.Hour - 50*time.Minute)
	out, _, err := leaseCLI(t, now, fake.New(), append(lab, "lease")...)
	require.NoError(t, err)
	assert.Contains(t, out, `No lease end recorded for lab "leaselab"`)

	out, _, err = leaseCLI(t, now, fake.New(), append(lab, "lease", "+2h50m")...)
	require.NoError(t, err)
	assert.Equal(t, leaseEnd, dir.LeaseEnd())
	assert.Contains(t, out, "Lease end set to 2026-11-29T17:00:00Z: the lease ends in 2h50m (17:00 UTC).")
	st, err := dir.State()
	require.NoError(t, err)
	assert.Equal(t, 3, st.Choices.Options.Workers, "the lab's other choices are kept")

	out, _, err = leaseCLI(t, now, fake.New(), append(lab, "lease", "2026-11-29T18:00:00+01:00", "--json")...)
	require.NoError(t, err)
	var got struct{ Lease plan.Lease }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, leaseEnd, got.Lease.End)
	assert.Equal(t, int64(170*60), got.Lease.LeftSeconds)

	out, _, err = leaseCLI(t, leaseEnd.Add(-10*time.Minute), fake.New(), append(lab, "lease")...)
	require.NoError(t, err)
	assert.Contains(t, out, "The lease ends in 10m (17:00 UTC): 2026-11-29T17:00:00Z.")
	assert.Contains(t, out, "save your work now: mltrain --project leaselab --state-dir "+dir.Path()+" backup ~/lab-backup.tar.gz")

	_, _, err = leaseCLI(t, now, fake.New(), append(lab, "lease", "--clear")...)
	require.NoError(t, err)
	assert.True(t, dir.LeaseEnd().IsZero())

	// No lab: nothing to record it in, and the next step says so.
	_, _, err = leaseCLI(t, now, fake.New(), "--project", "leaselab", "--state-dir", t.TempDir(), "lease", "+1h")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no lab state")
}

// From 30 minutes before the end (and not a second earlier) every command
// prints the backup line to stderr, with the lab's flags; past the end it
// says the lease has passed.
func TestTheReminderAppearsWithin30MinutesOfTheEnd(t *testing.T) {
	dir, lab := leaseLab(t, leaseEnd)
	guide := append(lab, "lab", "guide")
	backup := "mltrain --project leaselab --state-dir " + dir.Path() + " backup ~/lab-backup.tar.gz"

	_, errOut, err := leaseCLI(t, leaseEnd.Add(-30*time.Minute-time.Second), nil, guide...)
	require.NoError(t, err)
	assert.Empty(t, errOut, "30m01s before the end: quiet")

	out, errOut, err := leaseCLI(t, leaseEnd.Add(-24*time.Minute), nil, guide...)
	require.NoError(t, err)
	assert.Equal(t, "lease ends in 24m (17:00 UTC): save your work now: "+backup+", then copy the file off the node\n", errOut)
	assert.NotContains(t, out, "lease ends in", "stdout is the command's own")

	_, errOut, err = leaseCLI(t, leaseEnd.Add(-30*time.Minute), nil, append(lab, "version")...)
	require.NoError(t, err)
	assert.Contains(t, errOut, "lease ends in 30m (17:00 UTC)")

	_, errOut, err = leaseCLI(t, leaseEnd.Add(12*time.Minute), nil, guide...)
	require.NoError(t, err)
	assert.Equal(t, "lease end 17:00 UTC has passed (12m ago): the node may be wiped at any moment: save your work now: "+backup+", then copy the file off the node\n", errOut)

	// up --lease-end speaks of the end it records, not the recorded one
	// (a bad value is left to up, which fails on it).
	_, errOut, _ = leaseCLI(t, leaseEnd.Add(-5*time.Minute), fake.New(), append(lab, "up", "--lease-end", "+2h", "--data", "bogus")...)
	assert.NotContains(t, errOut, "lease ends in")
	_, errOut, _ = leaseCLI(t, leaseEnd.Add(-3*time.Hour), fake.New(), append(lab, "up", "--lease-end", "+20m", "--data", "bogus")...)
	assert.Contains(t, errOut, "lease ends in 20m (14:20 UTC)")

	// --json: one JSON event on stderr, as the command's progress is.
	_, errOut, err = leaseCLI(t, leaseEnd.Add(-5*time.Minute), nil, append(guide, "--json")...)
	require.NoError(t, err)
	var ev struct{ Kind, Message string }
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(errOut)), &ev), errOut)
	assert.Contains(t, ev.Message, "lease ends in 5m (17:00 UTC): save your work now: "+backup)

	// Tab completion stays clean.
	_, errOut, err = leaseCLI(t, leaseEnd.Add(-5*time.Minute), nil, append([]string{"__complete"}, append(lab, "lab", "")...)...)
	require.NoError(t, err)
	assert.NotContains(t, errOut, "lease")

	// The default lab's line names no flag.
	t.Setenv("HOME", t.TempDir())
	def := state.DefaultDir("mltrain")
	ch := plan.Choices{LeaseEnd: leaseEnd}
	require.NoError(t, def.SaveState(state.State{Project: "mltrain", Choices: &ch}))
	_, errOut, err = leaseCLI(t, leaseEnd.Add(-5*time.Minute), nil, "version")
	require.NoError(t, err)
	assert.Contains(t, errOut, "save your work now: mltrain backup ~/lab-backup.tar.gz, then")
}

func TestStatusShowsTheTimeLeft(t *testing.T) {
	s := newStatusLab(t)
	ch := plan.Choices{Options: plan.Options{Project: statusProject}.WithDefaults(), LeaseEnd: leaseEnd}
	require.NoError(t, s.dir.SaveState(state.State{Project: statusProject, Plan: s.plan,
		Probes: plan.Probes{Ray: s.ray.URL, MinIO: "http://127.0.0.1:1"}, URLs: plan.MakeURLs(s.plan), Choices: &ch}))
	lab := []string{"status", "--state-dir", s.dir.Path(), "--project", statusProject}

	out, errOut, err := leaseCLI(t, leaseEnd.Add(-2*time.Hour-10*time.Minute), s.eng, lab...)
	require.NoError(t, err)
	assert.Contains(t, out, "Lease: ends in 2h10m (17:00 UTC); back up before it: 'mltrain --project stat --state-dir "+s.dir.Path()+" backup ~/lab-backup.tar.gz'\n")
	assert.Empty(t, errOut, "no reminder yet")

	out, _, err = leaseCLI(t, leaseEnd.Add(-2*time.Hour-10*time.Minute), s.eng, append(lab, "--json")...)
	require.NoError(t, err)
	var st struct {
		Lease *plan.Lease `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.NotNil(t, st.Lease)
	assert.Equal(t, int64(130*60), st.Lease.LeftSeconds)
	assert.Equal(t, "ends in 2h10m (17:00 UTC)", st.Lease.Left)
	assert.False(t, st.Lease.Warn)

	// A lab with no lease end shows none.
	s.saveState(t)
	out, _, err = leaseCLI(t, leaseEnd, s.eng, lab...)
	require.NoError(t, err)
	assert.NotContains(t, out, "Lease:")
}

func TestLabRefusesAnExerciseThatCannotFinishBeforeTheLease(t *testing.T) {
	dir, lab := leaseLab(t, leaseEnd)
	flags := "mltrain --project leaselab --state-dir " + dir.Path()
	_, _, err := leaseCLI(t, leaseEnd.Add(-19*time.Minute), nil, append(lab, "lab", "fault", "--cpus", "2")...)
	require.Error(t, err)
	assert.Equal(t, 1, clierr.Code(err))
	assert.EqualError(t, err, "exercise fault not started: it may take up to 20m and the node's lease ends in 19m (17:00 UTC), so it could not finish before the node is wiped")
	assert.Equal(t, "a rehearsal fits (up to 6m): '"+flags+" lab fault --cpus 2 --quick'; "+
		"back up first: '"+flags+" backup ~/lab-backup.tar.gz', and copy the file off the node; "+
		"if the lease end is wrong, correct it: '"+flags+" lease TIME'", clierr.Hint(err))

	_, _, err = leaseCLI(t, leaseEnd.Add(-24*time.Minute), nil, append(lab, "lab", "all", "--quick")...)
	assert.EqualError(t, err, "every exercise not started: it may take up to 25m and the node's lease ends in 24m (17:00 UTC), so it could not finish before the node is wiped")
	assert.NotContains(t, clierr.Hint(err), "rehearsal", "a quick run has nothing shorter")

	// One that fits goes on (and fails later for want of a Ray to talk to,
	// not for the lease).
	_, _, err = leaseCLI(t, leaseEnd.Add(-19*time.Minute), fake.New(), append(lab, "lab", "infeasible", "--ray-address", "http://127.0.0.1:1")...)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "lease")
}
