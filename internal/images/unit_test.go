package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// layered is a fake engine whose pulls report layer progress the way the
// engine does (Downloading with sizes, then Pull complete).
type layered struct {
	*fake.Engine
	layers map[string][]int64 // ref -> layer sizes
}

func (l *layered) ImagePull(ctx context.Context, ref string, fn func(docker.PullProgress)) error {
	for i, size := range l.layers[ref] {
		id := fmt.Sprintf("%s-l%d", ref, i)
		fn(docker.PullProgress{Layer: id, Status: "Pulling fs layer"})
		fn(docker.PullProgress{Layer: id, Status: "Downloading", Current: size / 2, Total: size})
	}
	for i := range l.layers[ref] {
		fn(docker.PullProgress{Layer: fmt.Sprintf("%s-l%d", ref, i), Status: "Pull complete"})
	}
	return l.Engine.ImagePull(ctx, ref, fn)
}

func TestPullsRunInParallelWithBytesSummedPerImage(t *testing.T) {
	f := fake.New()
	mb := int64(1 << 20)
	eng := &layered{Engine: f, layers: map[string][]int64{
		"a/one:1":   {10 * mb, 4 * mb},
		"a/two:2":   {3 * mb},
		"a/three:3": {5 * mb, 5 * mb, 1 * mb},
	}}
	f.Images["a/here:1"] = docker.Image{ID: "sha256:here"}
	var rec progress.Recorder
	res, err := Pull(context.Background(), eng, []string{"a/one:1", "a/two:2", "a/three:3", "a/here:1"}, Options{}, &rec)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/one:1", "a/three:3", "a/two:2"}, res.Pulled)
	assert.Equal(t, []string{"a/here:1"}, res.Present)
	want := map[string]int64{"pull a/one:1": 14 * mb, "pull a/two:2": 3 * mb, "pull a/three:3": 11 * mb}
	for step, total := range want {
		var last progress.Event
		for _, e := range rec.Events() {
			if e.Step == step && e.Kind == progress.Update && e.Total > 0 {
				last = e
			}
		}
		assert.Equal(t, total, last.Total, "%s: total is the sum of its layers", step)
		assert.Equal(t, total, last.Current, "%s: complete at the end", step)
		assert.Equal(t, "bytes", last.Unit)
		assert.True(t, rec.Has(step, progress.Done), step)
	}
	assert.False(t, rec.Has("pull a/here:1", progress.Start), "present images are not pulled")
}

// gate blocks pulls until n of them are in flight at once, proving they run
// in parallel (a serial puller would time out).
func TestPullsOverlap(t *testing.T) {
	f := fake.New()
	var mu sync.Mutex
	inFlight, peak := 0, 0
	all := make(chan struct{})
	f.PullFunc = func(ref string) error {
		mu.Lock()
		inFlight++
		if inFlight > peak {
			peak = inFlight
		}
		if inFlight == 3 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			return errors.New("pulls did not overlap")
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	}
	_, err := Pull(context.Background(), f, []string{"x/a:1", "x/b:1", "x/c:1"}, Options{Parallel: 3}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, peak)
}

func TestPullRetriesTransientErrorsThenSucceeds(t *testing.T) {
	f := fake.New()
	calls := 0
	f.PullFunc = func(ref string) error {
		calls++
		if calls < 3 {
			return errors.New("pull x/a:1: read tcp 10.0.0.2:443: connection reset by peer")
		}
		return nil
	}
	var rec progress.Recorder
	res, err := Pull(context.Background(), f, []string{"x/a:1"}, Options{Retry: Retry{Tries: 3, Initial: time.Millisecond, Max: time.Millisecond}}, &rec)
	require.NoError(t, err)
	assert.Equal(t, 3, calls)
	assert.Equal(t, []string{"x/a:1"}, res.Pulled)
	assert.True(t, saidPrefix(&rec, "pull x/a:1", "try 2 failed"), "retries are shown")
}

func TestPullGivesUpAfterTriesAndDoesNotRetryPermanentErrors(t *testing.T) {
	f := fake.New()
	calls := map[string]int{}
	f.PullFunc = func(ref string) error {
		calls[ref]++
		if ref == "x/gone:1" {
			return errors.New("pull x/gone:1: manifest unknown: manifest unknown")
		}
		return errors.New("pull x/flaky:1: net/http: TLS handshake timeout")
	}
	_, err := Pull(context.Background(), f, []string{"x/gone:1", "x/flaky:1"}, Options{Parallel: 1, Retry: Retry{Tries: 3, Initial: time.Millisecond, Max: time.Millisecond}}, nil)
	require.Error(t, err)
	assert.Equal(t, 1, calls["x/gone:1"], "a missing manifest is not retried")
	assert.Equal(t, 3, calls["x/flaky:1"])
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"x/flaky:1", "x/gone:1"}, ue.Images)
	assert.Contains(t, err.Error(), "x/flaky:1: net/http: TLS handshake timeout (after 3 tries)")
	assert.Contains(t, err.Error(), `x/gone has no tag "1" in its registry (manifest unknown)`)
	assert.NotContains(t, err.Error(), "mltrain", "the message says what failed; the command layer says what to do")
}

// The engine's answer on a host without a registry (no DNS for it): not
// retried, and said once for all the images it stops.
func TestPullDNSFailureIsNotRetriedAndSaidOnce(t *testing.T) {
	const lookup = "lookup registry-1.docker.io on 10.255.255.53:53: no such host"
	f := fake.New()
	calls := map[string]int{}
	var mu sync.Mutex // the pulls run in parallel
	f.PullFunc = func(ref string) error {
		mu.Lock()
		calls[ref]++
		mu.Unlock()
		if ref == "x/gone:1" {
			return errors.New("pull x/gone:1: manifest unknown: manifest unknown")
		}
		return fmt.Errorf("pull %s: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: %s", ref, lookup)
	}
	refs := []string{"minio/minio:1", "prom/prometheus:2", "grafana/grafana:3", "x/gone:1"}
	var rec progress.Recorder
	_, err := Pull(context.Background(), f, refs, Options{Retry: Retry{Tries: 4, Initial: time.Millisecond, Max: time.Millisecond}}, &rec)
	require.Error(t, err)
	for _, ref := range refs {
		assert.Equal(t, 1, calls[ref], "%s: a DNS failure is not transient", ref)
		assert.False(t, saidPrefix(&rec, "pull "+ref, "try 1 failed"), "no retry is announced")
	}
	assert.Equal(t, "could not pull 4 image(s):\n  x/gone has no tag \"1\" in its registry (manifest unknown)\n"+
		"  registry registry-1.docker.io: this host cannot resolve its name ("+lookup+"); not pulled: grafana/grafana:3, minio/minio:1, prom/prometheus:2",
		err.Error())
	for _, ref := range refs[:3] {
		assert.True(t, rec.Has("pull "+ref, progress.Fail))
	}
	assert.Empty(t, clierr.Hint(err), "what to type is the command layer's to say")

	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, PullMissing, ue.Policy)
	for _, msg := range []string{"dial tcp: lookup registry.example: Temporary failure in name resolution",
		"dial tcp: lookup registry.example on 127.0.0.53:53: server misbehaving", "dial tcp: lookup r.example on 127.0.0.53:53: read udp 127.0.0.1:40000->127.0.0.53:53: i/o timeout"} {
		var d *dnsError
		assert.ErrorAs(t, classify(errors.New(msg), Retry{}), &d, msg)
	}
	assert.NotErrorAs(t, classify(errors.New("dial tcp 10.0.0.1:443: i/o timeout"), Retry{}), new(*dnsError), "a timeout to an address is not DNS")
}

// A node that reaches no registry (the lab's five images from two
// registries, the resolver's port differing between pulls): the error is
// a summary and one line per registry, each pull's step names the
// registry without repeating the resolver's words.
func TestPullWithoutRegistriesSaysEachRegistryOnce(t *testing.T) {
	f := fake.New()
	var mu sync.Mutex
	port := 40000
	f.PullFunc = func(ref string) error {
		mu.Lock()
		port++
		p := port
		mu.Unlock()
		host := "registry-1.docker.io"
		if strings.HasPrefix(ref, "quay.io/") {
			host = "quay.io"
		}
		return fmt.Errorf("pull %s: Error response from daemon: Get \"https://%s/v2/\": dial tcp: lookup %s on 127.0.0.53:53: read udp 127.0.0.1:%d->127.0.0.53:53: i/o timeout", ref, host, host, p)
	}
	refs := []string{"rayproject/ray:2.54.0-py312-gpu", "minio/minio:1", "prom/prometheus:2", "grafana/grafana:3", "quay.io/jupyter/pytorch-notebook:4"}
	var rec progress.Recorder
	_, err := Pull(context.Background(), f, refs, Options{}, &rec)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3, err.Error())
	assert.Equal(t, "could not pull 5 image(s):", lines[0])
	assert.Regexp(t, `^  registry registry-1\.docker\.io: this host cannot resolve its name \(lookup registry-1\.docker\.io on 127\.0\.0\.53:53: read udp 127\.0\.0\.1:4000\d->127\.0\.0\.53:53: i/o timeout\); `+
		`not pulled: grafana/grafana:3, minio/minio:1, prom/prometheus:2, rayproject/ray:2\.54\.0-py312-gpu$`, lines[1])
	assert.Regexp(t, `^  registry quay\.io: this host cannot resolve its name \(lookup quay\.io .*\); not pulled: quay\.io/jupyter/pytorch-notebook:4$`, lines[2])

	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "could not pull 5 image(s), 2 registry(ies) out of reach (see the error below)", ue.Summary())
	fails := 0
	for _, e := range rec.Events() {
		if e.Kind == progress.Fail {
			fails++
			assert.NotContains(t, e.Message, "lookup", "%s: the resolver's words are said once, in the error", e.Step)
			assert.Regexp(t, `^(registry-1\.docker\.io|quay\.io) is out of reach \(see below\)$`, e.Message)
		}
	}
	assert.Equal(t, 5, fails, "each pull's step ends")
}

func TestRateLimitWaitsLonger(t *testing.T) {
	f := fake.New()
	calls := 0
	f.PullFunc = func(string) error {
		calls++
		if calls == 1 {
			return errors.New("toomanyrequests: You have reached your pull rate limit")
		}
		return nil
	}
	var rec progress.Recorder
	_, err := Pull(context.Background(), f, []string{"x/a:1"}, Options{Retry: Retry{Tries: 2, Initial: time.Millisecond, Max: time.Millisecond, RateLimitWait: 300 * time.Millisecond}}, &rec)
	require.NoError(t, err)
	assert.True(t, saidPrefix(&rec, "pull x/a:1", "try 1 failed (toomanyrequests"), "%v", rec.Events())
	found := false
	for _, e := range rec.Events() {
		found = found || strings.HasSuffix(e.Message, "retrying in 300ms")
	}
	assert.True(t, found, "the rate-limit wait is used, not the short backoff")
}

func TestPullAlwaysPullsPresentImages(t *testing.T) {
	f := fake.New()
	f.Images["x/a:1"] = docker.Image{ID: "sha256:old"}
	res, err := Pull(context.Background(), f, []string{"x/a:1"}, Options{Pull: PullAlways}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"x/a:1"}, res.Pulled)
	assert.Equal(t, []string{"x/a:1"}, f.CallsOf("pull"))
}

func TestEnsureRejectsUnpinnedImagesAndBadPolicy(t *testing.T) {
	f := fake.New()
	_, err := Ensure(context.Background(), f, Request{Pull: []string{"minio/minio:latest"}}, Options{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "minio/minio:latest")
	assert.NotEmpty(t, clierr.Hint(err))
	_, err = Ensure(context.Background(), f, Request{Pull: []string{"grafana/grafana"}}, Options{}, nil)
	assert.ErrorContains(t, err, "no tag")
	assert.Empty(t, f.CallsOf("pull"))

	_, err = ParsePullPolicy("sometimes")
	assert.ErrorContains(t, err, `--pull "sometimes"`)
	assert.Contains(t, clierr.Hint(err), "--pull missing")
	p, err := ParsePullPolicy("")
	require.NoError(t, err)
	assert.Equal(t, PullMissing, p)
}

func TestEnsurePullsBasesOfNeededBuildsOnly(t *testing.T) {
	f := fake.New()
	needed := NewSpec("needed", "1.0.0", []byte("ARG RAY_VERSION=0\nFROM base/needed:${RAY_VERSION}\n"))
	fresh := NewSpec("fresh", "1.0.0", []byte("FROM base/fresh:1\n"))
	f.Images[fresh.Ref] = docker.Image{ID: "sha256:f", Labels: map[string]string{labels.ImageHash: fresh.Hash}}
	res, err := Ensure(context.Background(), f, Request{Pull: []string{"ext/a:1"}, Build: []Spec{needed, fresh}}, Options{}, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"ext/a:1", "base/needed:1.0.0"}, f.CallsOf("pull"), "the build arg picks the base; an up-to-date build needs no base")
	assert.Equal(t, []string{needed.Ref}, res.Built)
	assert.Equal(t, []string{fresh.Ref}, res.UpToDate)
	assert.Equal(t, needed.Hash, f.Images[needed.Ref].Labels[labels.ImageHash])
}

func TestVersionChecks(t *testing.T) {
	lab := func(ray, py string) docker.Image {
		return docker.Image{Labels: map[string]string{labels.ImageRayVersion: ray, labels.ImagePythonVersion: py}}
	}
	assert.Empty(t, compareWithJupyter("w", lab("2.54.0", "3.12"), "j", lab("2.54.0", "3.12")))
	w := compareWithJupyter("w", lab("2.54.0", "3.12"), "j", lab("2.53.0", "3.11"))
	require.Len(t, w, 2)
	assert.Contains(t, w[0], "Ray versions differ: worker image w has Ray 2.54.0, Jupyter image j has Ray 2.53.0")
	assert.Contains(t, w[1], "Python 3.11")
	w = compareWithJupyter("w", lab("2.54.0", "3.12"), "j", docker.Image{})
	require.Len(t, w, 2)
	assert.Contains(t, w[0], "image j has no mltrain.ray.version label")
	assert.Equal(t, []VersionMismatch{{What: "Python", Label: labels.ImagePythonVersion, Got: "3.12", Want: "3.11"}},
		CompareVersions(lab("2.54.0", "3.12"), Versions{Ray: "2.54.0", Python: "3.11"}), "one typed mismatch, the matching Ray left out")
	assert.Equal(t, []VersionMismatch{{What: "Ray", Label: labels.ImageRayVersion, Want: "2.54.0"}},
		CompareVersions(docker.Image{Labels: map[string]string{labels.ImagePythonVersion: "3.12"}}, Versions{Ray: "2.54.0", Python: "3.12"}), "a missing label is a mismatch with Got empty")

	for ref, want := range map[string][2]string{
		"rayproject/ray:2.54.0":                     {"2.54.0", "3.10"},
		"rayproject/ray:2.54.0-py312":               {"2.54.0", "3.12"},
		"docker.io/rayproject/ray:2.54.0-py311-gpu": {"2.54.0", "3.11"},
	} {
		ray, py, ok := RayImageVersions(ref)
		assert.True(t, ok, ref)
		assert.Equal(t, want, [2]string{ray, py}, ref)
	}
	_, _, ok := RayImageVersions("minio/minio:RELEASE.2025")
	assert.False(t, ok)

	assert.Empty(t, CompareHead("rayproject/ray:2.54.0-py312", "w", lab("2.54.0", "3.12")))
	h := CompareHead("rayproject/ray:2.54.0", "w", lab("2.54.0", "3.12"))
	require.Len(t, h, 1)
	assert.Contains(t, h[0], "Python 3.10")
	assert.Contains(t, h[0], "use rayproject/ray:2.54.0-py312 for the head")
}

// Ensure reports mismatches it finds among what it made present.
func TestEnsureWarnsOnVersionMismatch(t *testing.T) {
	f := fake.New()
	specs := []Spec{NewSpec("ray-cuda", "2.54.0", []byte("FROM scratch\n")), NewSpec("jupyter-ray", "2.54.0", []byte("FROM scratch\n"))}
	specs[0].Role, specs[1].Role = RoleWorker, RoleJupyter
	f.Images[specs[0].Ref] = docker.Image{ID: "sha256:w", Labels: map[string]string{
		labels.ImageHash: specs[0].Hash, labels.ImageRayVersion: "2.54.0", labels.ImagePythonVersion: "3.12"}}
	f.Images[specs[1].Ref] = docker.Image{ID: "sha256:j", Labels: map[string]string{
		labels.ImageHash: specs[1].Hash, labels.ImageRayVersion: "2.54.0", labels.ImagePythonVersion: "3.13"}}
	f.Images["rayproject/ray:2.54.0"] = docker.Image{ID: "sha256:h"}
	var rec progress.Recorder
	res, err := Ensure(context.Background(), f, Request{Pull: []string{"rayproject/ray:2.54.0"}, Build: specs}, Options{}, &rec)
	require.NoError(t, err)
	assert.Len(t, res.Warnings, 2, "%v", res.Warnings)
	warned := 0
	for _, e := range rec.Events() {
		if e.Kind == progress.Warn {
			warned++
		}
	}
	assert.Equal(t, 2, warned)
	assert.Empty(t, f.CallsOf("build"))
	assert.Empty(t, f.CallsOf("pull"))
}

// Missing is what an up would pull: external images and the bases of the
// builds that are not up to date, less what is here.
func TestMissingIsWhatEnsureWouldPull(t *testing.T) {
	f := fake.New()
	fresh := NewSpec("fresh", "2.54.0", []byte("FROM base/fresh:1\n"))
	stale := NewSpec("stale", "2.54.0", []byte("FROM base/stale:1\n"))
	f.Images = map[string]docker.Image{
		"minio/minio:1":  {},
		fresh.Ref:        {Labels: map[string]string{labels.ImageHash: fresh.Hash}},
		stale.Ref:        {Labels: map[string]string{labels.ImageHash: "an-older-hash"}},
		"base/present:1": {},
	}
	req := Request{Pull: []string{"minio/minio:1", "grafana/grafana:3", "base/stale:1"}, Build: []Spec{fresh, stale}}
	missing, total, err := Missing(context.Background(), f, req)
	require.NoError(t, err)
	assert.Equal(t, []string{"grafana/grafana:3", "base/stale:1"}, missing, "the fresh build's base is not needed; the stale one's is, once")
	assert.Equal(t, 5, total)
}
