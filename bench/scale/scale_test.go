// Package scale measures how `mltrain up` and `mltrain verify` grow with the
// number of workers, on stand-in labs of 2, 4 and 8 workers (CPU-rehearsal
// plans on the real engine), each size measured in the same run so the
// ratios compare like with like.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench/scale
package scale

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/verify"
)

var sizes = []int{2, 4, 8}

type sample []time.Duration

func (s sample) sorted() sample { c := slices.Clone(s); slices.Sort(c); return c }
func (s sample) median() time.Duration {
	return s.sorted()[len(s)/2]
}
func (s sample) String() string {
	c := s.sorted()
	return fmt.Sprintf("min %.2fs / median %.2fs / max %.2fs", c[0].Seconds(), c[len(c)/2].Seconds(), c[len(c)-1].Seconds())
}

// BenchmarkScaling brings each size up from nothing to proven ready, runs a
// whole verification of it (dataset manifest present), and takes it down,
// every iteration. Each size is paired with the engine's floor for as many
// containers, measured in the same iteration: up's time beyond that floor
// is what mltrain adds, since the engine's own start cost grows with the
// containers whatever tool starts them. Goals: up at most 2 s beyond the
// floor at 8 workers (beyond8_s), and verify under 3 s at 8 workers.
func BenchmarkScaling(b *testing.B) {
	eng := dockertest.Engine(b)
	ctx := context.Background()
	type lab_ struct {
		opts  lifecycle.UpOptions
		state state.Dir
	}
	labs := map[int]*lab_{}
	for _, n := range sizes {
		o := labtest.LabOptions(b, eng, fmt.Sprintf("mlts%d", n))
		o.Workers = n
		state := state.Dir(b.TempDir())
		labs[n] = &lab_{state: state, opts: lifecycle.UpOptions{StateDir: state, Lab: o, Images: images.Options{Pull: images.PullNever},
			Timeout: 3 * time.Minute, StopTimeout: 2 * time.Second}}
		labtest.WriteManifest(b, eng, o.DataVolume)
	}
	deps := lifecycle.UpDeps{Engine: eng, Detect: func(context.Context) (host.Facts, error) {
		f := labtest.RehearsalFacts()
		f.CPUs = 16 // enough for 8 workers of 1 CPU beside the other services
		return f, nil
	}}
	sleeper := dockertest.SleeperImage(b, eng)
	up, ver, floor, beyond := map[int]sample{}, map[int]sample{}, map[int]sample{}, map[int]sample{}
	for b.Loop() {
		for _, n := range sizes {
			l := labs[n]
			t0 := time.Now()
			if _, err := lifecycle.Up(ctx, deps, l.opts); err != nil {
				b.Fatalf("up of %d workers: %v", n, err)
			}
			up[n] = append(up[n], time.Since(t0))
			cs, err := eng.ContainerList(ctx, map[string]string{labels.Project: l.opts.Lab.Project})
			if err != nil {
				b.Fatal(err)
			}
			d, err := verify.System(eng, l.state, verify.SystemOptions{HelperLabels: map[string]string{dockertest.TestLabel: "1"},
				Host: host.Options{Root: "../../internal/gpu/testdata/none"}})
			if err != nil {
				b.Fatal(err)
			}
			// The engine's health reaches "healthy" one healthcheck interval
			// after up proved the lab ready, and Prometheus scrapes on its own
			// cycle: verify is timed on a settled lab, as an instructor runs it.
			deadline := time.Now().Add(time.Minute)
			for !verify.Run(ctx, d, verify.Options{Only: []string{verify.GroupContainers, verify.GroupMetrics}}).OK {
				if time.Now().After(deadline) {
					b.Fatalf("%d workers: the lab did not settle", n)
				}
				time.Sleep(time.Second)
			}
			t0 = time.Now()
			r := verify.Run(ctx, d, verify.Options{})
			ver[n] = append(ver[n], time.Since(t0))
			for _, c := range r.Checks {
				// Exercises never ran on these labs; everything else must pass.
				if c.Status == verify.Fail && c.Group != verify.GroupExercises {
					b.Fatalf("%d workers: %s failed: %s", n, c.ID, c.Evidence)
				}
			}
			if _, err := lifecycle.Down(ctx, eng, l.opts.Lab.Project, false, nil); err != nil {
				b.Fatal(err)
			}
			// The same number of plain containers, on the same engine, now.
			f := engineFloor(b, eng, sleeper, len(cs))
			floor[n] = append(floor[n], f)
			beyond[n] = append(beyond[n], up[n][len(up[n])-1]-f)
		}
	}
	for _, n := range sizes {
		b.ReportMetric(up[n].median().Seconds(), fmt.Sprintf("up%d_s", n))
		b.ReportMetric(ver[n].median().Seconds(), fmt.Sprintf("verify%d_s", n))
		b.ReportMetric(floor[n].median().Seconds(), fmt.Sprintf("floor%d_s", n))
		b.ReportMetric(beyond[n].median().Seconds(), fmt.Sprintf("beyond%d_s", n))
		b.Logf("%d workers: up %s; verify %s; engine floor (create+start as many plain containers) %s", n, up[n], ver[n], floor[n])
		b.Logf("%d workers: up beyond the engine's floor (paired per iteration) %s", n, beyond[n])
	}
	b.ReportMetric(up[8].median().Seconds()/up[2].median().Seconds(), "up8/up2")
	b.ReportMetric(ver[8].median().Seconds()/ver[2].median().Seconds(), "verify8/verify2")
	b.ReportMetric(floor[8].median().Seconds()/floor[2].median().Seconds(), "floor8/floor2")
	// What up adds beyond the engine's start cost as workers grow.
	b.ReportMetric((up[8].median() - up[2].median() - (floor[8].median() - floor[2].median())).Seconds(), "extra_growth_s")
}
