package verify

import (
	"context"
	"testing"
	"time"

	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	labstatus "github.com/mltrain/mltrain/lab/status"
)

// BenchmarkVerifyStandinLab times a whole verification of a ready stand-in
// lab on the real engine (goal: 3 s or less), against two baselines measured
// in the same iterations: the same checks one group after another (what
// running them concurrently saves), and `mltrain status` (the cheapest look
// at the lab: container list and inspect, plus Ray's nodes).
//
// The plan is switched to a 2-GPU NVIDIA lab whose workers answer nvidia-smi
// (stand-ins), so the GPU listing by exec in each worker is part of the cost
// as on a real node; every exercise has a record, so Ray's job history is
// read too. The host checks fail (this machine has no GPU for that plan)
// and the exercise checks fail (the stand-in head keeps no job history):
// both at their full cost.
//
//	go test -run '^$' -bench VerifyStandinLab -benchtime 10x ./lab/verify/
func BenchmarkVerifyStandinLab(b *testing.B) {
	s := upStandinLab(b)
	s.writeManifest(b)
	recs, _ := records() // records each exercise's judge accepts: verify goes on to Ray
	for _, rec := range recs {
		if err := exercise.SaveRecord(s.stateDir, rec); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	d := s.deps(b)
	pretendNVIDIA(&d)

	// Ready: every container healthy and every node scraped.
	deadline := time.Now().Add(time.Minute)
	for !Run(ctx, d, Options{Only: []string{GroupContainers, GroupMetrics}}).OK {
		if time.Now().After(deadline) {
			b.Fatal("the stand-in lab did not become ready")
		}
		time.Sleep(time.Second)
	}

	var all, byGroup, status time.Duration
	checks := 0
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r := Run(ctx, d, Options{})
		t1 := time.Now()
		for _, g := range Groups {
			Run(ctx, d, Options{Only: []string{g}})
		}
		t2 := time.Now()
		if _, err := labstatus.Get(ctx, s.eng, nextstep.CommandsFor(s.project, s.stateDir)); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		all, byGroup, status = all+t1.Sub(t0), byGroup+t2.Sub(t1), status+t3.Sub(t2)
		checks = len(r.Checks)
		for _, c := range r.Checks {
			if c.Status == Fail && c.Group != GroupExercises && c.Group != GroupHost {
				b.Fatalf("%s failed on a ready lab: %s", c.ID, c.Evidence)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(all.Seconds()*1000/n, "verify-ms")
	b.ReportMetric(byGroup.Seconds()*1000/n, "groups-one-by-one-ms")
	b.ReportMetric(status.Seconds()*1000/n, "status-ms")
	b.ReportMetric(byGroup.Seconds()/all.Seconds(), "one-by-one/verify")
	b.ReportMetric(all.Seconds()/status.Seconds(), "verify/status")
	b.ReportMetric(float64(checks), "checks")
}
