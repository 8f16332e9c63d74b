package state

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
)

func TestSetLeaseEndKeepsTheRestOfTheState(t *testing.T) {
	d := Dir(t.TempDir())
	_, err := d.SetLeaseEnd(time.Now())
	assert.True(t, errors.Is(err, ErrNoLab), "no lab, nothing to record it in: %v", err)
	assert.True(t, d.LeaseEnd().IsZero())

	ch := plan.Choices{Options: plan.Options{Project: "lab2", Workers: 3}.WithDefaults(), HostIP: "10.0.0.5"}
	up := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	require.NoError(t, d.SaveState(State{Project: "lab2", UpAt: up, Choices: &ch}))

	end := time.Date(2026, 11, 29, 18, 0, 0, 0, time.FixedZone("CET", 3600))
	prev, err := d.SetLeaseEnd(end)
	require.NoError(t, err)
	assert.True(t, prev.IsZero())
	assert.Equal(t, time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC), d.LeaseEnd())
	s, err := d.State()
	require.NoError(t, err)
	assert.Equal(t, up, s.UpAt)
	assert.Equal(t, 3, s.Choices.Options.Workers, "the other choices stay")
	assert.Equal(t, "10.0.0.5", s.Choices.HostIP)

	prev, err = d.SetLeaseEnd(time.Time{})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC), prev)
	assert.True(t, d.LeaseEnd().IsZero(), "cleared")

	// A state with no choices (join's) gets choices holding the lease.
	j := Dir(t.TempDir())
	require.NoError(t, j.SaveState(State{Project: "lab2"}))
	_, err = j.SetLeaseEnd(end)
	require.NoError(t, err)
	c, ok := j.Choices()
	require.True(t, ok)
	assert.Equal(t, plan.Choices{LeaseEnd: end.UTC()}, c)
}
