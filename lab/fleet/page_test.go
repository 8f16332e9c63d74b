package fleet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/fleet/fleettest"
	"github.com/mltrain/mltrain/lab/verify"
)

// fullReport has a check in every group, those of failed failing.
func fullReport(failed ...string) verify.Report {
	r := report()
	for _, g := range verify.Groups[1:] {
		r.Checks = append(r.Checks, verify.Check{ID: g + ".up", Group: g, Title: g + " answers", Status: verify.Pass, Evidence: "ok"})
		r.Passed++
	}
	for _, id := range failed {
		g, _, _ := strings.Cut(id, ".")
		r.Checks = append(r.Checks, verify.Check{ID: id, Group: g, Status: verify.Fail, Evidence: "broken", Fix: "mltrain up"})
		r.Failed++
	}
	r.OK = len(failed) == 0
	return r
}

// A section's page at a laptop's 1000 px: the matrix (every check group,
// long host names, long reasons) fits without scrolling sideways, the why
// column shows, and the page never tells its reader to make itself.
func TestFleetPageFitsA1000PxWindow(t *testing.T) {
	fleettest.Chromium(t)
	ok, bad, reh := fullReport(), fullReport("ray.auth", "minio.bucket", "exercises.submit", "exercises.infeasible", "metrics.targets"), rehearsed()
	o := Options{Mltrain: "mltrain"}
	h := Host{Spec: "cc@129.114.108.215:22"}
	failedNode := classify(verify.Node{Host: h.Spec, Label: "grace hopper (section 2, Tuesday)"}, h, o, mustJSON(t, bad), ran{exit: 1})
	unreach := verify.Node{Host: "cc@node-17.chameleoncloud.example.org:2222", Label: "dennis", State: Unreachable}
	unreach.Detail, unreach.Fix = dialProblem("node-17.chameleoncloud.example.org:2222",
		&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED})
	rep := Report{Started: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Hosts: []verify.Node{
		{Host: "cc@129.114.108.210", Label: "ada", State: Passed, Report: &ok},
		failedNode,
		{Host: "cc@129.114.108.212", Label: "barbara", State: Rehearsed, Detail: "passed, " + reh.ConditionsSummary(), Report: &reh},
		unreach,
		{Host: "cc@129.114.108.213", Label: "barbara-liskov-with-a-very-long-unbroken-label-name", State: HostKey,
			Detail: "host key CHANGED: [129.114.108.213]:22 now shows SHA256:Jb8nQp1n0x4U6bH6p3aJ1wT5k8mYt0p2Jt9cVv3QeXk, /home/instructor/.ssh/known_hosts:17 holds another",
			Fix:    "ssh-keygen -R '[129.114.108.213]:22' -f /home/instructor/.ssh/known_hosts"},
	}}
	file := filepath.Join(t.TempDir(), "fleet.html")
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, rep.WriteHTML(f))
	require.NoError(t, f.Close())
	page, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(page), "--html", "the page does not tell its reader to write it")

	p := fleettest.OpenWith(t, file, "fleet-verify-1000px", fleettest.Options{Width: 1000, Eval: map[string]string{
		"scroll":   `document.documentElement.scrollWidth`,
		"viewport": `document.documentElement.clientWidth`,
		"whyLeft":  `document.querySelector("table.matrix th:last-child").getBoundingClientRect().left`,
		"whyRight": `document.querySelector("table.matrix th:last-child").getBoundingClientRect().right`,
		"groups":   `document.querySelectorAll("table.matrix thead th").length`,
	}})
	assert.Empty(t, p.Problems)
	v := p.Values
	t.Logf("at 1000 px: %v", v)
	assert.Equal(t, float64(len(verify.Groups)+3), v["groups"], "node, state, every group, why")
	assert.LessOrEqual(t, v["scroll"], 1000.0, "the page does not scroll sideways at 1000 px")
	assert.LessOrEqual(t, v["whyRight"], v["viewport"], "the why column ends inside the window")
	assert.GreaterOrEqual(t, v["whyRight"]-v["whyLeft"], 180.0, "the why column is wide enough to read")
	assert.Contains(t, p.Text, "refused the connection")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
