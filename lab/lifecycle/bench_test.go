package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/state"
)

// spread is a sample of durations, reported as min/median/max.
type spread []time.Duration

func (s spread) median() time.Duration {
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2]
}

func (s spread) String() string {
	c := slices.Clone(s)
	slices.Sort(c)
	return fmt.Sprintf("min %.2fs / median %.2fs / max %.2fs (n=%d)", c[0].Seconds(), c[len(c)/2].Seconds(), c[len(c)-1].Seconds(), len(c))
}

// BenchmarkUp measures, in one run on the same rendered stand-in lab with
// every image present:
//   - mltrain up from no containers to proven ready (up_s);
//   - the baseline: Docker Compose v5 (dockertest.ComposeModule) `up -d` on
//     the very compose.yaml mltrain wrote, then the same readiness checks
//     (compose_s); ratio = up_s / compose_s, medians (goal <= 1);
//   - a no-op re-up of a ready lab (noop_up_s, goal <= 1 s).
//
// Run: go test -run '^$' -bench BenchmarkUp -benchtime 5x ./lab
func BenchmarkUp(b *testing.B) {
	bin := dockertest.ComposeV5(b)
	s := newStandinLab(b)
	ctx := context.Background()
	var up, cmp, noop spread
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.up(ctx); err != nil {
			b.Fatal(err)
		}
		up = append(up, time.Since(t0))

		t0 = time.Now()
		if _, err := s.up(ctx); err != nil {
			b.Fatal(err)
		}
		noop = append(noop, time.Since(t0))
		if _, err := lifecycle.Down(ctx, s.eng, s.project, false, nil); err != nil {
			b.Fatal(err)
		}

		file := s.stateDir + "/compose.yaml"
		t0 = time.Now()
		if out, err := dockertest.Compose(b, bin, "-f", file, "up", "-d"); err != nil {
			b.Fatalf("docker compose up: %v\n%s", err, out)
		}
		clients, err := state.Dir(s.stateDir).Connect()
		if err != nil {
			b.Fatal(err)
		}
		if err := ready.Wait(ctx, s.eng, s.project, lifecycle.ReadyChecks(clients, s.eng, s.project), 3*time.Minute, nil); err != nil {
			b.Fatal(err)
		}
		cmp = append(cmp, time.Since(t0))
		if out, err := dockertest.Compose(b, bin, "-f", file, "down"); err != nil {
			b.Fatalf("docker compose down: %v\n%s", err, out)
		}
	}
	b.ReportMetric(up.median().Seconds(), "up_s")
	b.ReportMetric(cmp.median().Seconds(), "compose_s")
	b.ReportMetric(up.median().Seconds()/cmp.median().Seconds(), "up/compose")
	b.ReportMetric(noop.median().Seconds(), "noop_up_s")
	b.Logf("mltrain up: %s", up)
	b.Logf("compose v5 up -d + readiness: %s (%s)", cmp, dockertest.ComposeModule)
	b.Logf("no-op re-up: %s", noop)
}
