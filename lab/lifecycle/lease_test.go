package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
)

// The lease end is one of the lab's choices: up records it, 'mltrain
// lease' changes it on the running lab, and a re-up that does not name
// --lease-end keeps it (as mltrain up computes its choices: the recorded
// ones with the flags the user named over them).
func TestTheLeaseEndIsRememberedAcrossReUps(t *testing.T) {
	f := newFakeLab(t)
	end := time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC)
	f.opts.LeaseEnd = end
	_, err := f.up()
	require.NoError(t, err)
	assert.Equal(t, end, f.state.LeaseEnd())

	reUp := func(given ...string) []string {
		prev, ok := f.state.Choices()
		require.True(t, ok)
		flags := plan.Choices{Options: f.opts.Lab, LeaseEnd: f.opts.LeaseEnd}
		c := flags.Over(prev, func(name string) bool {
			for _, g := range given {
				if g == name {
					return true
				}
			}
			return false
		})
		f.opts.Lab, f.opts.LeaseEnd = c.Options, c.LeaseEnd
		_, err := f.up()
		require.NoError(t, err)
		return c.Changes(prev)
	}
	f.opts.LeaseEnd = time.Time{} // the flag's zero: not given
	assert.Empty(t, reUp())
	assert.Equal(t, end, f.state.LeaseEnd(), "a bare re-up keeps the lease end")

	// 'mltrain lease' on the running lab, then a bare re-up.
	later := end.Add(time.Hour)
	prev, err := f.state.SetLeaseEnd(later)
	require.NoError(t, err)
	assert.Equal(t, end, prev)
	f.opts.LeaseEnd = time.Time{}
	assert.Empty(t, reUp())
	assert.Equal(t, later, f.state.LeaseEnd(), "the corrected end survives the re-up")

	// --lease-end on a re-up changes it, with a changed: note.
	f.opts.LeaseEnd = end
	assert.Equal(t, []string{"lease end: 2026-11-29 18:00 UTC → 2026-11-29 17:00 UTC"}, reUp("lease-end"))
	assert.Equal(t, end, f.state.LeaseEnd())
	st, err := f.state.State()
	require.NoError(t, err)
	assert.False(t, st.UpAt.IsZero(), "the re-up proved the lab ready and kept the lease in the state it saved")
}
