package exercise_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/state"
)

func TestGuideAndText(t *testing.T) {
	g := exercise.Guide(nextstep.Commands{}, "http://h:8265")
	for _, n := range exercise.Names() {
		assert.Contains(t, g, "mltrain lab "+n)
	}
	assert.Contains(t, g, "By hand: ray job submit --runtime-env runtime.json --working-dir . -- python train.py --mode ray --max-failures 2; "+
		"while it trains: mltrain worker stop N; afterwards: mltrain worker start N\n")

	// Another lab's guide names commands that act on that lab.
	other := exercise.Guide(nextstep.Commands{Lab: state.Lab{Project: "lab2", StateDir: "/srv/my labs/2"}}, "")
	const flags = `mltrain --project lab2 --state-dir "/srv/my labs/2" `
	for _, n := range exercise.Names() {
		assert.Contains(t, other, "("+flags+"lab "+n+")")
	}
	for _, want := range []string{"the Ray dashboard (" + flags + "status shows its URL)", "`" + flags + "lab <name>`",
		"`" + flags + "lab all --quick`", "`" + flags + "verify`", "while it trains: " + flags + "worker stop N; afterwards: " + flags + "worker start N"} {
		assert.Contains(t, other, want)
	}
	assert.NotRegexp(t, "mltrain (lab|worker|status|verify)", strings.ReplaceAll(other, flags, ""), "every command names the lab")
	rec := exercise.Record{Exercise: "submit", OK: false, Problems: []string{"p1"}, Numbers: []exercise.Number{{Name: "job duration", Value: 12, Unit: "s"}}}
	txt := rec.Text()
	assert.Contains(t, txt, "NOT OBSERVED")
	assert.Contains(t, txt, "job duration")
	assert.Contains(t, txt, "problem: p1")

	// Where a job ran reads the same in the text as in the observed line.
	rec.Jobs = []exercise.JobRun{{SubmissionID: "a", Containers: []string{"ray-worker-0", "ray-worker-1"}, NodeIPs: []string{"10.0.0.3", "10.0.0.4"}},
		{SubmissionID: "b", NodeIPs: []string{"10.0.0.3"}}, {SubmissionID: "c"}}
	assert.Equal(t, "ray-worker-0 and ray-worker-1", rec.Jobs[0].Where())
	assert.Equal(t, "node 10.0.0.3", rec.Jobs[1].Where())
	assert.Equal(t, "an unreported node", rec.Jobs[2].Where())
	txt = rec.Text()
	assert.Contains(t, txt, "job a    0s  ray-worker-0 and ray-worker-1\n")
	assert.Contains(t, txt, "job b    0s  node 10.0.0.3\n")
	assert.Contains(t, txt, "job c    0s  \n", "a job that never ran was nowhere")
}
