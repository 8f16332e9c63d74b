package verify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

// The fix column and the verdict name commands that act on the lab verified:
// another lab's --project and --state-dir ride along, in the fixes checks
// write and in those that errors from below lab/ get.
func TestFixesNameTheVerifiedLab(t *testing.T) {
	const flags = `mltrain --project lab2 --state-dir "/srv/my labs/2" `
	o := Options{Timeout: 5 * time.Second, Commands: nextstep.Commands{Lab: state.Lab{Project: "lab2", StateDir: "/srv/my labs/2"}}}

	f := newFixture(t)
	stopWorker1(f)
	r := f.run(o)
	assert.Equal(t, flags+"worker start 1", find(t, r, "ray.nodes").Fix, "a check's own fix")
	for _, c := range r.Checks {
		if c.Fix != "" {
			assert.NotRegexp(t, `mltrain (up|down|status|logs|worker|lab|verify|doctor)\b`, strings.ReplaceAll(c.Fix, flags, ""),
				"%s: every command in the fix names the lab", c.ID)
		}
	}
	var b strings.Builder
	assert.NoError(t, WriteTable(&b, r, false))
	assert.Contains(t, b.String(), "run '"+flags+"verify' again")

	f = newFixture(t)
	f.ray.nodesErr = fmt.Errorf("GET /nodes: %w", ray.ErrUnreachable)
	r = f.run(o)
	assert.Equal(t, "run '"+flags+"status' to see whether the Ray head is up (or check RAY_ADDRESS)", find(t, r, "ray.nodes").Fix,
		"an error from below lab/ gets its next step for this lab")

	// The default lab's commands carry no flag.
	f = newFixture(t)
	stopWorker1(f)
	assert.Equal(t, "mltrain worker start 1", find(t, f.run(Options{Timeout: 5 * time.Second}), "ray.nodes").Fix)
}
