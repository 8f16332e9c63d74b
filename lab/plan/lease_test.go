package plan

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var leaseNow = time.Date(2026, 11, 29, 14, 10, 30, 0, time.UTC)

func TestParseLeaseEnd(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-29T17:00:00Z":      time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC),
		"2026-11-29T18:00:00+01:00": time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC), // kept in UTC
		"+2h50m":                    time.Date(2026, 11, 29, 17, 0, 30, 0, time.UTC),
		" 2h50m ":                   time.Date(2026, 11, 29, 17, 0, 30, 0, time.UTC),
		"+90s":                      time.Date(2026, 11, 29, 14, 12, 0, 0, time.UTC),
	} {
		got, err := ParseLeaseEnd(in, leaseNow)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, time.UTC, got.Location(), in)
	}
	for in, says := range map[string]string{
		"tomorrow":             `lease end "tomorrow" is neither an RFC 3339 time (such as 2026-11-29T17:00:00Z) nor a duration from now (such as +2h50m)`,
		"17:00":                `lease end "17:00" is neither`,
		"2026-11-29 17:00":     `lease end "2026-11-29 17:00" is neither`,
		"":                     `lease end "" is neither`,
		"+0s":                  `lease end "+0s": the duration from now must be positive`,
		"-1h":                  `lease end "-1h": the duration from now must be positive`,
		"2026-11-29T14:00:00Z": `lease end "2026-11-29T14:00:00Z" (14:00 UTC) has already passed (it is 14:10 UTC)`,
	} {
		_, err := ParseLeaseEnd(in, leaseNow)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), says, in)
		assert.True(t, errors.Is(err, ErrBadLeaseEnd), in)
	}
}

func TestLeaseAtSaysTimeLeftAndWhenToWarn(t *testing.T) {
	assert.Nil(t, LeaseAt(time.Time{}, leaseNow), "no end known, no lease")
	end := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	const backup = "mltrain backup ~/lab-backup.tar.gz"

	l := LeaseAt(end, end.Add(-2*time.Hour-50*time.Minute))
	assert.Equal(t, "ends in 2h50m (17:00 UTC)", l.Left)
	assert.Equal(t, int64(170*60), l.LeftSeconds)
	assert.False(t, l.Warn)
	assert.Empty(t, l.Reminder(backup))
	assert.True(t, l.Fits(2*time.Hour+50*time.Minute))
	assert.False(t, l.Fits(2*time.Hour+51*time.Minute))

	// One second outside the warning: still quiet; at 30 minutes it speaks.
	assert.Empty(t, LeaseAt(end, end.Add(-LeaseWarn-time.Second)).Reminder(backup))
	assert.Equal(t, "lease ends in 30m (17:00 UTC): save your work now: "+backup+", then copy the file off the node",
		LeaseAt(end, end.Add(-LeaseWarn)).Reminder(backup))
	assert.Equal(t, "lease ends in 24m (17:00 UTC): save your work now: "+backup+", then copy the file off the node",
		LeaseAt(end, end.Add(-24*time.Minute-10*time.Second)).Reminder(backup))
	assert.Contains(t, LeaseAt(end, end.Add(-20*time.Second)).Reminder(backup), "lease ends in under a minute (17:00 UTC)")
	assert.Equal(t, "ends in 20m (17:00 UTC)", LeaseAt(end, end.Add(-20*time.Minute+time.Millisecond)).Left, "to the nearest minute")
	assert.Equal(t, "ends in 2h (17:00 UTC)", LeaseAt(end, end.Add(-2*time.Hour-29*time.Second)).Left)

	// Past the end the line says so.
	l = LeaseAt(end, end.Add(5*time.Minute))
	assert.True(t, l.Passed)
	assert.Equal(t, "ended 5m ago (17:00 UTC)", l.Left)
	assert.Equal(t, int64(-300), l.LeftSeconds)
	assert.Equal(t, "lease end 17:00 UTC has passed (5m ago): the node may be wiped at any moment: save your work now: "+backup+", then copy the file off the node",
		l.Reminder(backup))
	assert.False(t, l.Fits(time.Minute))

	// An end on another day names its date.
	assert.Equal(t, "ends in 24h (2026-11-30 17:00 UTC)", LeaseAt(end.Add(24*time.Hour), end).Left)
}

func TestChoicesRememberTheLeaseEnd(t *testing.T) {
	end := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	prev := Choices{Options: Options{Project: "lab2"}.WithDefaults(), LeaseEnd: end}
	bare := Choices{Options: Options{Project: "lab2"}.WithDefaults()}
	none := func(string) bool { return false }
	got := bare.Over(prev, none)
	assert.Equal(t, end, got.LeaseEnd, "a re-up without --lease-end keeps it")
	assert.Empty(t, got.Changes(prev))

	later := Choices{Options: bare.Options, LeaseEnd: end.Add(time.Hour)}
	got = later.Over(prev, func(f string) bool { return f == "lease-end" })
	assert.Equal(t, end.Add(time.Hour), got.LeaseEnd)
	assert.Equal(t, []string{"lease end: 2026-11-29 17:00 UTC → 2026-11-29 18:00 UTC"}, got.Changes(prev))
	assert.Equal(t, []string{"lease end: none → 2026-11-29 17:00 UTC"}, prev.Changes(bare))
}
