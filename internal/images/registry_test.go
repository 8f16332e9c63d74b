package images

// Pulls from a real registry (the CNCF Distribution registry, built from
// its Go module by dockertest) on a loopback port, through a throttling
// proxy that stands for the network: progress on a terminal, a registry
// killed in the middle of a layer, a tag that does not exist, a registry
// that is not there.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/progress/progresstest"
)

// pushed is an image in the test registry that this host does not have.
type pushed struct {
	reg   *dockertest.Registry
	repo  string // repository path in the registry, no host
	tag   string
	id    string // the image ID the pull must produce
	bytes int64  // size of the random layer
}

// via is the image's reference through addr (the registry or a proxy).
func (p pushed) via(addr string) string { return addr + "/" + p.repo + ":" + p.tag }

// pushRandomImage builds a two-layer FROM scratch image, one layer of
// layerBytes of random (incompressible) data, pushes it to reg and removes
// it from the engine, so a pull has to fetch every byte.
func pushRandomImage(t *testing.T, eng docker.Engine, reg *dockertest.Registry, layerBytes int) pushed {
	t.Helper()
	blob := make([]byte, layerBytes)
	_, _ = rand.Read(blob)
	name := dockertest.UniqueName(t, "mltrain-test")
	local := name + ":src"
	ctx := ctxT(t)
	df := "FROM scratch\nCOPY small /small\nCOPY blob /blob\n"
	_, err := eng.ImageBuild(ctx, docker.BuildOptions{Tags: []string{local}, Labels: map[string]string{dockertest.TestLabel: "1"},
		Context: dockertest.TarOf(map[string][]byte{"Dockerfile": []byte(df), "small": []byte(name), "blob": blob})})
	require.NoError(t, err)
	img, err := eng.ImageInspect(ctx, local)
	require.NoError(t, err)
	p := pushed{reg: reg, repo: "mltrain-test/" + name, tag: "v1", id: img.ID, bytes: int64(layerBytes)}
	dockertest.Push(t, local, p.via(reg.Addr))
	require.NoError(t, eng.ImageRemove(ctx, p.via(reg.Addr)))
	require.NoError(t, eng.ImageRemove(ctx, local))
	_, err = eng.ImageInspect(ctx, local)
	require.True(t, docker.IsNotFound(err), "the pushed image must be gone from the engine: %v", err)
	return p
}

// removeAfter removes refs from the engine when the test ends.
func removeAfter(t *testing.T, eng docker.Engine, refs ...string) {
	t.Cleanup(func() {
		for _, r := range refs {
			_ = eng.ImageRemove(context.Background(), r)
		}
	})
}

// tee reports to several reporters.
type tee []progress.Reporter

func (t tee) Report(e progress.Event) {
	for _, r := range t {
		r.Report(e)
	}
}

func TestPullFromRegistryShowsItsProgressOnATerminal(t *testing.T) {
	eng := dockertest.Engine(t)
	reg := dockertest.StartRegistry(t)
	img := pushRandomImage(t, eng, reg, 8<<20)
	// 4 MiB/s: the pull lasts about two seconds, long enough to be drawn.
	proxy := dockertest.NewThrottle(t, reg.Addr, dockertest.NewLink(4<<20))
	ref := img.via(proxy.Addr())
	removeAfter(t, eng, ref)

	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 120}))
	var out strings.Builder
	read := make(chan struct{})
	go func() { _, _ = io.Copy(&out, ptmx); close(read) }()
	view := progress.NewTTY(tty)
	var rec progress.Recorder

	res, err := Pull(ctxT(t), eng, []string{ref}, Options{Retry: fastRetry}, tee{view, &rec})
	view.Close()
	tty.Close()
	<-read
	require.NoError(t, err)
	assert.Equal(t, []string{ref}, res.Pulled)
	got, err := eng.ImageInspect(ctxT(t), ref)
	require.NoError(t, err)
	assert.Equal(t, img.id, got.ID, "the pulled image is the one pushed")

	var mid, final progress.Event
	for _, e := range rec.Events() {
		if e.Step == "pull "+ref && e.Kind == progress.Update && e.Total > 0 {
			if e.Current < e.Total && mid.Total == 0 {
				mid = e
			}
			final = e
		}
	}
	assert.NotZero(t, mid.Total, "an amount short of the total was reported while the layers came in")
	assert.Equal(t, final.Total, final.Current, "the last amount is the whole image")
	assert.Greater(t, final.Total, img.bytes, "the total counts every layer (the random one is incompressible)")

	screen, redraws := progresstest.Screen(out.String())
	assert.Positive(t, redraws, "the live view redrew its row as bytes came in")
	assert.Regexp(t, `MiB / \d+(\.\d+)? MiB`, out.String(), "the row showed the bytes so far out of the image's total")
	require.NotEmpty(t, screen)
	assert.Contains(t, screen[len(screen)-1], "✓ pull "+ref, "the terminal keeps one line for the done pull")
}

// brokenRegistry is a pushed image behind a 2 MiB/s proxy, and a watcher
// that kills the registry (and cuts the proxy's connections) once 3 MiB of
// the 8 MiB layer have gone through: a crash in the middle of a layer.
func brokenRegistry(t *testing.T, eng docker.Engine) (img pushed, ref string, proxy *dockertest.Throttle) {
	t.Helper()
	reg := dockertest.StartRegistry(t)
	img = pushRandomImage(t, eng, reg, 8<<20)
	proxy = dockertest.NewThrottle(t, reg.Addr, dockertest.NewLink(2<<20))
	ref = img.via(proxy.Addr())
	removeAfter(t, eng, ref)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for proxy.Sent() < 3<<20 {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		reg.Kill()
		proxy.Cut()
	}()
	return img, ref, proxy
}

// waitSaid waits until rec has an event for step whose message contains s.
func waitSaid(t *testing.T, rec *progress.Recorder, step, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !said(rec, step, s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never said %q; events: %v", step, s, rec.Events())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func said(rec *progress.Recorder, step, s string) bool {
	for _, e := range rec.Events() {
		if e.Step == step && strings.Contains(e.Message, s) {
			return true
		}
	}
	return false
}

// The registry dies while a layer is half sent and is back before the
// engine's own retry: the pull resumes the layer (Docker 20.10 asks for the
// rest with a range request; an engine may also start it over), the
// progress says so and never counts back, and the image is the one pushed.
func TestPullBrokenOffMidLayerResumesWhenTheRegistryIsBack(t *testing.T) {
	eng := dockertest.Engine(t)
	img, ref, proxy := brokenRegistry(t, eng)
	var rec progress.Recorder
	step := "pull " + ref
	done := make(chan error, 1)
	go func() {
		_, err := Pull(ctxT(t), eng, []string{ref}, Options{Retry: Retry{Tries: 1}}, &rec)
		done <- err
	}()
	waitSaid(t, &rec, step, "download cut off, the engine retries in")
	img.reg.Start()
	require.NoError(t, <-done)
	got, err := eng.ImageInspect(ctxT(t), ref)
	require.NoError(t, err)
	assert.Equal(t, img.id, got.ID, "the pulled image is the one pushed")
	assert.Less(t, proxy.Sent(), 2*img.bytes, "the broken layer was resumed or fetched once more, not over and over")
	var last, total int64
	for _, e := range rec.Events() {
		if e.Step == step && e.Kind == progress.Update && e.Total > 0 {
			assert.GreaterOrEqual(t, e.Current, last, "the amount never goes back")
			assert.GreaterOrEqual(t, e.Total, total, "the total never shrinks")
			last, total = e.Current, e.Total
		}
	}
	assert.Equal(t, total, last)
	assert.Greater(t, total, img.bytes)
}

// The registry dies while a layer is half sent and the user interrupts the
// wait: nothing is tagged. Once the registry is back, running the pull again
// gets the whole image.
func TestPullInterruptedAfterALayerBrokeOffLeavesNothingAndARerunCompletes(t *testing.T) {
	eng := dockertest.Engine(t)
	img, ref, _ := brokenRegistry(t, eng)
	var rec progress.Recorder
	step := "pull " + ref
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := Pull(ctx, eng, []string{ref}, Options{Retry: fastRetry}, &rec)
		done <- err
	}()
	waitSaid(t, &rec, step, "download cut off")
	cancel() // Ctrl-C
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, rec.Has(step, progress.Fail))
	_, ierr := eng.ImageInspect(context.Background(), ref)
	assert.True(t, docker.IsNotFound(ierr), "nothing is tagged after a pull cut off: %v", ierr)

	img.reg.Start()
	res, err := Pull(ctxT(t), eng, []string{ref}, Options{Retry: fastRetry}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{ref}, res.Pulled)
	got, err := eng.ImageInspect(ctxT(t), ref)
	require.NoError(t, err)
	assert.Equal(t, img.id, got.ID, "the re-run pulled the whole image")
}

func TestPullOfATagTheRegistryLacksSaysImageAndTagAndDoesNotRetry(t *testing.T) {
	real := dockertest.Engine(t)
	eng := &counting{Engine: real}
	reg := dockertest.StartRegistry(t)
	img := pushRandomImage(t, real, reg, 1<<10)
	cases := map[string]struct{ repo, tag string }{
		"a tag the repository lacks":      {img.repo, "no-such-tag"},
		"a repository the registry lacks": {"mltrain-test/no-such-repo", "v1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := eng.pulls.Load()
			ref := reg.Addr + "/" + c.repo + ":" + c.tag
			_, err := Pull(ctxT(t), eng, []string{ref}, Options{Retry: Retry{Tries: 4, Initial: time.Second}}, nil)
			require.Error(t, err)
			t.Logf("what the user sees:\n%v", err)
			var nt *TagNotFoundError
			require.ErrorAs(t, err, &nt)
			assert.Equal(t, reg.Addr+"/"+c.repo, nt.Image)
			assert.Equal(t, c.tag, nt.Tag)
			assert.Contains(t, err.Error(), fmt.Sprintf("%s has no tag %q", reg.Addr+"/"+c.repo, c.tag))
			assert.EqualValues(t, 1, eng.pulls.Load()-before, "a missing tag is not retried")
			assert.NotContains(t, err.Error(), "tries")
		})
	}
}

func TestPullFromARegistryThatIsNotThereIsOneError(t *testing.T) {
	eng := dockertest.Engine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	refs := []string{addr + "/mltrain-test/a:v1", addr + "/mltrain-test/b:v1"}
	_, err = Pull(ctxT(t), eng, refs, Options{Retry: fastRetry}, nil)
	require.Error(t, err)
	t.Logf("what the user sees:\n%v", err)
	var ru *RegistryUnreachableError
	require.ErrorAs(t, err, &ru)
	assert.Equal(t, addr, ru.Registry)
	msg := err.Error()
	assert.Equal(t, 1, strings.Count(msg, "registry "+addr+": this host cannot connect to it (connect: connection refused)"), "said once for both images:\n%s", msg)
	for _, r := range refs {
		assert.Contains(t, msg, r)
	}
	var ue *UnavailableError
	require.True(t, errors.As(err, &ue))
	assert.ElementsMatch(t, refs, ue.Images)
}
