package fleet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/verify"
)

func TestTableLinesUpHostsAndGroups(t *testing.T) {
	ok, bad := report(), report("ray.auth", "ray.nodes")
	r := Report{Hosts: []verify.Node{
		{Host: "cc@10.0.0.1", Label: "ada", State: Passed, Report: &ok},
		{Host: "cc@10.0.0.2", State: Failed, Detail: "failed: ray.auth, ray.nodes", Fix: "see each failed check's fix", Report: &bad},
		{Host: "cc@10.0.0.3", Label: "ken", State: Unreachable, Detail: "connection refused", Fix: "check the lease"},
	}, States: map[string]int{Passed: 1, Failed: 1, Unreachable: 1}, Seconds: 2}
	reh := rehearsed()
	r2 := Report{Hosts: []verify.Node{{Host: "cc@10.0.0.4", State: Rehearsed, Detail: "passed, " + reh.ConditionsSummary(), Report: &reh}},
		States: map[string]int{Rehearsed: 1}, OK: true, Seconds: 1}
	var rb strings.Builder
	require.NoError(t, WriteTable(&rb, r2, false))
	assert.Contains(t, rb.String(), "cc@10.0.0.4  rehearsed  ok    ok, rehearsed", "counted apart, never a plain pass")
	assert.Contains(t, rb.String(), "1 hosts in 1.0s: 1 rehearsed: every host is verified, 1 only as a rehearsal")
	var b strings.Builder
	require.NoError(t, WriteTable(&b, r, false))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, "HOST         STATE        host  ray", lines[0])
	assert.Equal(t, "ada          passed       ok    -", lines[1])
	assert.Equal(t, "cc@10.0.0.2  failed       ok    FAIL 2", lines[2])
	assert.Equal(t, "ken          unreachable  -     -", lines[3])
	assert.Equal(t, "cc@10.0.0.2: failed: ray.auth, ray.nodes", lines[5])
	assert.Equal(t, "  fix: see each failed check's fix", lines[6])
	assert.Equal(t, "ken (cc@10.0.0.3): connection refused", lines[7])
	assert.Equal(t, "Each failed check's evidence and fix: run again with --html FILE (one page) or --json.", lines[10])
	assert.Equal(t, "3 hosts in 2.0s: 1 passed, 1 failed, 1 unreachable: NOT every host is verified", lines[12])

	var c strings.Builder
	require.NoError(t, WriteTable(&c, r, true))
	assert.Contains(t, c.String(), colorRed+"FAIL 2"+colorReset)
	assert.Contains(t, c.String(), colorGreen+"passed"+colorReset)
	plain := strings.NewReplacer(colorRed, "", colorGreen, "", colorReset, "").Replace(c.String())
	assert.Equal(t, b.String(), plain, "colour does not move the columns")
}
