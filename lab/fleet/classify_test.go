package fleet

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/verify"
)

func TestClassify(t *testing.T) {
	h := Host{Spec: "cc@n1"}
	o := Options{Mltrain: "mltrain"}
	js := func(v any) []byte {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return b
	}
	for _, c := range []struct {
		name   string
		out    []byte
		r      ran
		state  string
		detail string
	}{
		{"passed", js(report()), ran{}, Passed, ""},
		{"rehearsed", js(rehearsed()), ran{}, Rehearsed, "passed, 1 check(s) only under conditions: quick, CPU rehearsal"},
		{"failed checks", js(report("ray.auth")), ran{exit: 1}, Failed, "failed: ray.auth"},
		{"no lab", js(verify.Failure{Error: "no lab state at /x", Reason: verify.ReasonNoLab}), ran{exit: 1}, NoLab, "no lab state at /x"},
		{"no lab, said by an older mltrain", nil, ran{exit: 1, stderr: "Error: no lab state at /x / Next: run 'mltrain up' first"}, NoLab, "no lab state at /x"},
		{"verify cannot run", js(verify.Failure{Error: "engine down"}), ran{exit: 1}, Failed, "verify could not run: engine down"},
		{"not found", nil, ran{exit: 127, stderr: "sh: 1: mltrain: not found"}, NoMltrain, "mltrain is not on cc@n1 (sh: 1: mltrain: not found)"},
		{"not executable", nil, ran{exit: 126}, NoMltrain, "mltrain is not on cc@n1 (exit status 126)"},
		{"too old", nil, ran{exit: 2, stderr: "Error: unknown flag: --json"}, NoMltrain, "exited 2: Error: unknown flag: --json"},
		{"not a report", []byte("hello"), ran{exit: 0}, NoMltrain, "its output is not a verify report"},
		{"killed", nil, ran{exit: -1}, NoMltrain, "exited -1: no output"},
	} {
		n := classify(verify.Node{Host: h.Spec}, h, o, c.out, c.r)
		assert.Equal(t, c.state, n.State, c.name)
		assert.Contains(t, n.Detail, c.detail, c.name)
		if c.state != Passed {
			assert.NotEmpty(t, n.Fix, c.name)
		} else {
			assert.NotNil(t, n.Report, c.name)
		}
	}
	o.Project, o.StateDir = "lab2", "/srv/lab2"
	n := classify(verify.Node{Host: h.Spec}, h, o, nil, ran{exit: 1, stderr: "Error: no lab state at /x"})
	assert.Contains(t, n.Fix, "'mltrain --project lab2 --state-dir /srv/lab2 up' on "+h.Spec, "the fix names the lab the hosts were asked about")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "b / c", tail("a\n\nb\n  c  \n", 2))
	assert.Equal(t, "", tail("", 3))
}

// rehearsed is a report whose exercise passed only under conditions.
func rehearsed() verify.Report {
	r := report()
	r.Checks = append(r.Checks, verify.Check{ID: "exercises.submit", Group: "exercises", Status: verify.Pass, Evidence: "SUCCEEDED",
		Conditions: []string{"quick", "CPU rehearsal"}})
	r.Passed, r.Conditional = 2, 1
	return r
}
