package verify

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/plan"
)

// A submit run --quick with its CPUs fitted down to the lab, on a CPU
// rehearsal lab, passes; every report shows how it was earned, and a node
// whose passes are such is "rehearsed", never "passed". Its GPU group
// reads n/a (rehearsal), not ok.
func TestVerdictsCarryTheirConditions(t *testing.T) {
	f := newFixture(t)
	p := f.plan
	p.Mode = plan.ModeCPU
	f.setPlan(p)
	setRec(f, "submit", func(r *exercise.Record) {
		r.Quick, r.Rehearsal = true, true
		r.Sizing = &exercise.Sizing{Course: 8, Asked: 0.5, NodeCPUs: 1, Why: "8 CPUs asked by the course; this lab's workers have 1: asking 0.5"}
	})
	rep := f.run(Options{Only: []string{GroupExercises, GroupGPU}})
	c := f.check("exercises.submit")
	require.Equal(t, Pass, c.Status, c.Evidence)
	want := []string{"quick", "0.5 CPUs of the course's 8", "CPU rehearsal"}
	assert.Equal(t, want, c.Conditions)
	assert.Equal(t, 1, rep.Conditional)
	assert.Empty(t, f.check("exercises.multi").Conditions, "a run at the course's size has none")

	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, rep, false))
	assert.Regexp(t, `PASS +exercises.submit +\(passed under conditions: quick, 0.5 CPUs of the course's 8, CPU rehearsal\) Ray has job`, table.String())
	assert.Contains(t, table.String(), "1 of them only under conditions (marked)")

	var junit bytes.Buffer
	require.NoError(t, WriteJUnit(&junit, rep))
	assert.Contains(t, junit.String(), "[quick, 0.5 CPUs of the course&#39;s 8, CPU rehearsal]")

	n := SingleNode("node1", rep)
	assert.Equal(t, NodeRehearsed, n.State)
	assert.Contains(t, n.Detail, "1 check(s) only under conditions: quick, 0.5 CPUs of the course's 8, CPU rehearsal")
	var page bytes.Buffer
	require.NoError(t, WriteHTML(&page, "verify", []Node{n}, time.Now()))
	html := page.String()
	assert.Contains(t, html, "under conditions: quick, 0.5 CPUs of the course&#39;s 8, CPU rehearsal")
	assert.Contains(t, html, `<span class="state rehearsed">rehearsed</span>`)
	assert.Contains(t, html, "n/a (rehearsal)", "the GPU column of a lab without GPUs")
	assert.False(t, strings.Contains(html, `title="1 passed, 0 skipped">ok<`), "no plain ok for a conditional group")
	assert.Equal(t, "n/a (rehearsal)", rep.Tally()[GroupGPU].Cell())
	assert.Equal(t, "ok, rehearsed", rep.Tally()[GroupExercises].Cell())
}
