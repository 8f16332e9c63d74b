package exercise_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/lab/exercise"
)

func TestGuideAndText(t *testing.T) {
	g := exercise.Guide("http://h:8265")
	for _, n := range exercise.Names() {
		assert.Contains(t, g, "mltrain lab "+n)
	}
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
