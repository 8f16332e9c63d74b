package compose

import (
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/docker"
)

func details(state string, code, restarts int, policy container.RestartPolicyMode) docker.ContainerDetails {
	return docker.ContainerDetails{Container: docker.Container{Name: "lab-ray-worker-0", State: state}, ExitCode: code,
		RestartCount: restarts, HostConfig: &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: policy}}}
}

// A container Docker restarts is waited for, saying so, until it restarted
// RestartsTolerated times more or RestartGrace ran out; nil Restarts (and a
// plain exit) never wait.
func TestRestartsWaitBoundedAndSaySo(t *testing.T) {
	var lines []string
	rs := &Restarts{Say: func(l string) { lines = append(lines, l) }}
	wait, why := rs.waits(details("restarting", 1, 4, container.RestartPolicyOnFailure))
	assert.True(t, wait)
	assert.Empty(t, why)
	assert.Len(t, lines, 1)
	assert.Regexp(t, `^lab-ray-worker-0 exited with code 1 and Docker is restarting it \(its restart policy\): waiting for it, 0s so far of at most 1m30s$`, lines[0])

	// Between an exit and its restart, with the count risen: still waiting.
	wait, _ = rs.waits(details("exited", 1, 5, container.RestartPolicyOnFailure))
	assert.True(t, wait, "exited with on-failure and a risen RestartCount is Docker restarting it")
	wait, _ = rs.waits(details("exited", 0, 5, container.RestartPolicyOnFailure))
	assert.False(t, wait, "on-failure does not restart an exit 0")
	assert.Len(t, lines, 1, "one line per %s, not per check", restartSay)

	// A crash loop: three restarts more during the wait, and it is a failure.
	wait, why = rs.waits(details("restarting", 1, 7, container.RestartPolicyOnFailure))
	assert.False(t, wait)
	assert.Regexp(t, `^exited with code 1; Docker's restart policy started it again 3 times in \d+s and it did not stay up$`, why)

	// Past the grace: a failure too.
	old := RestartGrace
	RestartGrace = 0
	defer func() { RestartGrace = old }()
	rs2 := &Restarts{}
	wait, why = rs2.waits(details("restarting", 2, 0, container.RestartPolicyAlways))
	assert.False(t, wait)
	assert.Contains(t, why, "exited with code 2")

	var none *Restarts
	wait, why = none.waits(details("restarting", 1, 1, container.RestartPolicyOnFailure))
	assert.False(t, wait, "a nil Restarts does not wait")
	assert.Empty(t, why)
	wait, _ = (&Restarts{}).waits(details("exited", 1, 0, container.RestartPolicyDisabled))
	assert.False(t, wait, "a plain exit is no restart")
}
