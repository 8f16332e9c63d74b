package lifecycle_test

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

// join's hints name join's own re-run, on the user's lab: never "mltrain up",
// which on a second host would make a lab of its own.
func TestJoinHintsNameJoinsRerun(t *testing.T) {
	const again = "mltrain --project fakejoin --state-dir /srv/j join BUNDLE --workers 1"
	cmds := nextstep.Commands{Lab: state.Lab{Project: "fakejoin", StateDir: "/srv/j"}, Ran: []string{"join", "BUNDLE", "--workers", "1"}}

	// A head this host cannot reach: the firewall hint ends with join again.
	j := newFakeJoin(t)
	j.opts.Commands = cmds
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	j.opts.Bundle.GCSPort = closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	_, err = j.join(t, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this host cannot reach the head's GCS")
	assert.Contains(t, clierr.Hint(err), "then run '"+again+"' again")
	assert.NotContains(t, clierr.Hint(err), "mltrain up")

	// A failed first join rolls back and says how to keep the containers.
	j = newFakeJoin(t)
	j.opts.Commands = cmds
	j.eng.StartFunc = failStartOf("fakejoin-ray-worker-0")
	rec := &progress.Recorder{}
	_, err = j.join(t, rec)
	require.ErrorIs(t, err, errStart)
	var notes []string
	for _, e := range rec.Events() {
		notes = append(notes, e.Message)
	}
	assert.Contains(t, strings.Join(notes, "\n"), "'"+again+" --no-rollback' keeps them for inspection")
}
