package compose

import (
	"fmt"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/mltrain/mltrain/internal/docker"
)

// RestartGrace bounds how long a wait lets Docker's restart policy bring a
// container back, and RestartsTolerated how often it may restart meanwhile:
// a worker whose raylet gave up on a restarted head exits and is started
// again once and joins (lab/render), while a container that fails as it
// starts restarts every few hundred milliseconds (Docker's backoff starts
// at 100 ms and doubles) and is reported after a few tries, not at the
// health timeout.
var (
	RestartGrace      = 90 * time.Second
	RestartsTolerated = 3
)

// restartSay is how often a wait says it still waits for a restart.
const restartSay = 5 * time.Second

// Restarts remembers, across one wait's checks, the containers Docker
// restarts under their restart policy, so the wait waits for them (bounded,
// saying so) instead of reporting them as failed. The zero value waits
// silently; a nil one does not wait at all.
type Restarts struct {
	// Say gets a line while a container is waited for.
	Say func(line string)

	mu   sync.Mutex
	seen map[string]*restartSeen
}

type restartSeen struct {
	since, said time.Time
	count       int // RestartCount when first seen restarting
}

// restarting says whether the engine restarts d under its restart policy:
// "restarting" (State.Restarting: Docker decided to start it again and
// waits out its backoff), or exited with a policy that restarts it after
// its RestartCount rose during this wait (between an exit and its restart).
func restarting(d docker.ContainerDetails, seen *restartSeen) bool {
	if d.State == "restarting" {
		return true
	}
	if d.State != "exited" || d.HostConfig == nil || seen == nil || d.RestartCount <= seen.count {
		return false
	}
	switch d.HostConfig.RestartPolicy.Name {
	case container.RestartPolicyAlways, container.RestartPolicyUnlessStopped:
		return true
	case container.RestartPolicyOnFailure:
		max := d.HostConfig.RestartPolicy.MaximumRetryCount
		return d.ExitCode != 0 && (max == 0 || d.RestartCount < max)
	}
	return false
}

// waits says whether d is a container Docker is restarting that the wait
// still waits for; reason is why it no longer does (for the failure).
func (r *Restarts) waits(d docker.ContainerDetails) (bool, string) {
	if r == nil {
		return false, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*restartSeen{}
	}
	s := r.seen[d.Name]
	if !restarting(d, s) {
		return false, ""
	}
	now := time.Now()
	if s == nil {
		s = &restartSeen{since: now, count: d.RestartCount}
		r.seen[d.Name] = s
	}
	n := d.RestartCount - s.count
	if n >= RestartsTolerated || now.Sub(s.since) >= RestartGrace {
		return false, fmt.Sprintf("exited with code %d; Docker's restart policy started it again %d times in %s and it did not stay up",
			d.ExitCode, n, now.Sub(s.since).Round(time.Second))
	}
	if r.Say != nil && (s.said.IsZero() || now.Sub(s.said) >= restartSay) {
		s.said = now
		r.Say(fmt.Sprintf("%s exited with code %d and Docker is restarting it (its restart policy): waiting for it, %s so far of at most %s",
			d.Name, d.ExitCode, now.Sub(s.since).Round(time.Second), RestartGrace))
	}
	return true, ""
}
