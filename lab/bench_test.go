package lab_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/ready"
)

// BenchmarkUp measures, in one run on the same rendered stand-in lab with
// every image present:
//   - mltrain up from no containers to proven ready (up_s);
//   - the baseline: docker-compose up -d on the same compose.yaml, then the
//     same readiness checks (compose_s); ratio = up_s / compose_s (goal <= 1);
//   - a no-op re-up of a ready lab (noop_up_s, goal <= 1 s).
//
// Run: go test -run '^$' -bench BenchmarkUp -benchtime 3x ./lab/lifecycle
// (needs the docker-compose binary, Debian package docker-compose).
func BenchmarkUp(b *testing.B) {
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		b.Skip("docker-compose not installed: the baseline cannot be measured (apt-get install docker-compose)")
	}
	s := newStandinLab(b)
	ctx := context.Background()
	var upTotal, dcTotal, noopTotal time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_, err := s.up(ctx)
		if err != nil {
			b.Fatal(err)
		}
		upTotal += time.Since(t0)

		t0 = time.Now()
		if _, err := s.up(ctx); err != nil {
			b.Fatal(err)
		}
		noopTotal += time.Since(t0)

		if _, err := lab.Down(ctx, s.eng, s.project, false, nil); err != nil {
			b.Fatal(err)
		}

		// Baseline: the same project through docker-compose (v1 reads an
		// older schema: drop the top-level name and depends_on.required).
		file := composeV1Copy(b, s.stateDir)
		t0 = time.Now()
		cmd := exec.Command(dc, "-f", file, "-p", s.project, "up", "-d")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker-compose up: %v\n%s", err, out)
		}
		clients, err := lab.StateDir(s.stateDir).Connect()
		if err != nil {
			b.Fatal(err)
		}
		if err := ready.Wait(ctx, s.eng, s.project, clients.ReadyChecks(), 3*time.Minute, nil); err != nil {
			b.Fatal(err)
		}
		dcTotal += time.Since(t0)
		if out, err := exec.Command(dc, "-f", file, "-p", s.project, "down").CombinedOutput(); err != nil {
			b.Fatalf("docker-compose down: %v\n%s", err, out)
		}
	}
	n := float64(b.N)
	b.ReportMetric(upTotal.Seconds()/n, "up_s")
	b.ReportMetric(dcTotal.Seconds()/n, "compose_s")
	b.ReportMetric(upTotal.Seconds()/dcTotal.Seconds(), "up/compose")
	b.ReportMetric(noopTotal.Seconds()/n, "noop_up_s")
}

func composeV1Copy(b testing.TB, stateDir string) string {
	src, err := os.ReadFile(filepath.Join(stateDir, compose.ComposeFile))
	if err != nil {
		b.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^name: .*\n|^\s+required: true\n`).ReplaceAll(src, nil)
	// v1 knows ports only in the short form for a host address.
	long := regexp.MustCompile(`(?m)^(\s+)- mode: ingress\n\s+host_ip: (\S+)\n\s+target: (\d+)\n\s+published: "(\d+)"\n\s+protocol: (\w+)\n`)
	out = long.ReplaceAll(out, []byte("${1}- \"${2}:${4}:${3}/${5}\"\n"))
	path := filepath.Join(stateDir, "compose.v1.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
