package exercise

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/plan"
)

func gpus(n int) []gpu.GPU {
	var out []gpu.GPU
	for i := range n {
		out = append(out, gpu.GPU{Vendor: gpu.NVIDIA, Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "A100", PCIBusID: fmt.Sprintf("0000:%02x:00.0", i+1)})
	}
	return out
}

// On every lab the plan sizes (2 to 256 CPUs, 1, 2 or 4 workers, share-GPU
// and CPU rehearsal), every exercise's requests fit the workers, two at
// once where the exercise needs two on one worker, and are the course's
// wherever the course's fit.
func TestEveryExerciseFitsEveryPlannedLab(t *testing.T) {
	creds := plan.GenerateCredentials()
	type lab struct {
		name  string
		facts host.Facts
		opts  plan.Options
	}
	var labs []lab
	for _, cpus := range []int{2, 16, 64, 256} {
		f := host.Facts{CPUs: cpus, MemoryBytes: 64 << 30, HostIP: "10.0.0.1"}
		for _, w := range []int{1, 2, 4} {
			g := f
			g.GPUs = gpu.Report{GPUs: gpus(w)}
			labs = append(labs, lab{fmt.Sprintf("%d CPUs, %d GPU workers", cpus, w), g, plan.Options{}})
		}
		one := f
		one.GPUs = gpu.Report{GPUs: gpus(1)}
		labs = append(labs, lab{fmt.Sprintf("%d CPUs, share-GPU", cpus), one, plan.Options{ShareGPU: true}})
		labs = append(labs, lab{fmt.Sprintf("%d CPUs, CPU rehearsal", cpus), f, plan.Options{}})
	}
	for _, l := range labs {
		p, err := plan.New(l.facts, l.opts, creds)
		require.NoError(t, err, l.name)
		node := float64(p.Workers[0].CPUs)
		for _, ex := range Exercises() {
			s, err := size(ex.Name, ex.Request, 0, node)
			require.NoError(t, err, "%s: %s", l.name, ex.Name)
			assert.LessOrEqual(t, s.Asked*float64(ex.Request.PerNode), node, "%s: %s asks %g x %d", l.name, ex.Name, s.Asked, ex.Request.PerNode)
			assert.Greater(t, s.Asked, 0.0, "%s: %s", l.name, ex.Name)
			if ex.Request.CPUs*float64(ex.Request.PerNode) <= node {
				assert.Equal(t, ex.Request.CPUs, s.Asked, "%s: %s: the course's request fits", l.name, ex.Name)
				assert.Empty(t, s.Why)
			} else {
				assert.Contains(t, s.Why, fmt.Sprintf("%g CPUs asked by the course; this lab's workers have %g", ex.Request.CPUs, node), l.name)
			}
		}
	}
}

func TestSizingWords(t *testing.T) {
	s, err := size("submit", Request{CPUs: 8, PerNode: 1}, 0, 6)
	require.NoError(t, err)
	assert.Equal(t, 6.0, s.Asked)
	assert.Equal(t, "8 CPUs asked by the course; this lab's workers have 6: asking 6", s.Why)
	assert.True(t, s.Reduced())

	s, err = size("fractional", Request{CPUs: 4, PerNode: 2}, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, 0.5, s.Asked, "two half-GPU jobs share a 1-CPU worker")
	assert.Equal(t, "4 CPUs asked by the course; this lab's workers have 1 and 2 jobs share one: asking 0.5 each", s.Why)

	s, err = size("submit", Request{CPUs: 8, PerNode: 1}, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 8.0, s.Asked, "workers unknown: the course's numbers")

	s, err = size("submit", Request{CPUs: 8, PerNode: 1}, 2, 32)
	require.NoError(t, err)
	assert.Equal(t, Sizing{Course: 8, Asked: 2, NodeCPUs: 32, Flag: true, Why: "8 CPUs asked by the course; --cpus asks 2"}, s)
}

// --cpus that no worker holds (or that keeps fractional's two jobs off one
// worker) is refused before anything is submitted, naming the value to use.
func TestCPUsFlagThatFitsNoWorkerIsRefused(t *testing.T) {
	_, err := size("submit", Request{CPUs: 8, PerNode: 1}, 8, 6)
	require.Error(t, err)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), "--cpus 8: this lab's workers have 6 CPUs")
	assert.Contains(t, clierr.Hint(err), "use --cpus 6")

	_, err = size("fractional", Request{CPUs: 4, PerNode: 2}, 1, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fractional needs 2 of its jobs on one worker at once")
	assert.Contains(t, clierr.Hint(err), "use --cpus 0.5")
}

func TestSummaryCountsAndSaysTheConditions(t *testing.T) {
	recs := []Record{{Exercise: "submit", OK: true, Quick: true, Sizing: &Sizing{Course: 8, Asked: 1}}, {Exercise: "multi", OK: false},
		{Exercise: "fractional", OK: true, Sizing: &Sizing{Course: 4, Asked: 0.5}}, {Exercise: "tune", OK: true}}
	assert.Equal(t, []string{"quick", "1 CPUs of the course's 8"}, recs[0].Conditions())
	assert.Equal(t, "3 of 6 passed in 1m5s (under conditions: quick, CPUs fitted to the lab)", Summary(recs, 65*time.Second+300*time.Millisecond))
	assert.Equal(t, "1 of 6 passed in 2s", Summary(recs[3:], 2*time.Second))
}
