package progress

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress/progresstest"
)

// syncBuffer is the terminal: mpb writes from its own goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const spinnerFrames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

// closeWithin fails the test, rather than hanging it, when Close blocks.
func closeWithin(t *testing.T, tty *TTY, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { tty.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("TTY.Close did not return within %s", d)
	}
}

// took drops a line's "(1.2s)": the screen is compared without timings.
var took = regexp.MustCompile(` \(\d[\dhms.]*\)$`)

func screen(out string) []string {
	lines, _ := progresstest.Screen(out)
	for i := range lines {
		lines[i] = took.ReplaceAllString(lines[i], "")
	}
	return lines
}

func TestTTYCloseReturnsWhateverTheEvents(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name   string
		run    func(r Reporter)
		screen []string // what the terminal keeps, timings dropped
	}{
		{"sized step ended short of its total (issue 13: checksum reported at 64 MiB of 108)", func(r Reporter) {
			Begin(r, "checksum f.zip", "108 MiB")
			Advance(r, "checksum f.zip", 64*mib, 108*mib, "bytes")
			End(r, "checksum f.zip", "sha256 abc")
		}, []string{"✓ checksum f.zip: sha256 abc"}},
		{"sized step that reached its total, then ended", func(r Reporter) {
			Begin(r, "load", "")
			Advance(r, "load", 10, 10, "bytes")
			End(r, "load", "16643 images")
		}, []string{"✓ load: 16643 images"}},
		{"begun, never ended", func(r Reporter) {
			Begin(r, "wait ray-head", "")
			Say(r, "wait ray-head", "waiting: connection refused")
		}, []string{"✗ wait ray-head: stopped before it finished"}},
		{"sized step failed", func(r Reporter) {
			Begin(r, "download", "")
			Advance(r, "download", 5, 100, "bytes")
			Failed(r, "download", errors.New("connection reset"))
		}, []string{"✗ download: connection reset"}},
		{"unknown total", func(r Reporter) {
			Begin(r, "verify", "")
			Advance(r, "verify", 1234, 0, "")
			End(r, "verify", "ok")
		}, []string{"✓ verify: ok"}},
		{"count past its total", func(r Reporter) {
			Advance(r, "save", 200, 100, "bytes")
			End(r, "save", "")
		}, []string{"✓ save"}},
		{"size known, then unknown again", func(r Reporter) {
			Begin(r, "fetch", "")
			Advance(r, "fetch", 50, 100, "bytes")
			Say(r, "fetch", "the server does not resume downloads; starting over")
			Advance(r, "fetch", 10, 0, "bytes")
		}, []string{"✗ fetch: stopped before it finished"}},
		{"begun twice", func(r Reporter) {
			Begin(r, "pull", "")
			Advance(r, "pull", 1, 10, "")
			Begin(r, "pull", "again")
			End(r, "pull", "")
		}, []string{"✓ pull"}},
		{"warnings and notes only", func(r Reporter) {
			Warning(r, "no GPU: CPU rehearsal")
			Note(r, "created network lab")
		}, []string{"! no GPU: CPU rehearsal", "created network lab"}},
		{"nothing at all", func(Reporter) {}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var term syncBuffer
			tty := NewTTY(&term)
			c.run(tty)
			closeWithin(t, tty, 20*time.Second)
			out := term.String()
			assert.Equal(t, c.screen, screen(out), "%q", out)
			assert.True(t, strings.HasPrefix(out, HideCursor), "cursor hidden first")
			assert.True(t, strings.HasSuffix(out, ShowCursor), "cursor shown last:\n%q", out)
		})
	}
}

func TestTTYCloseReturnsWithManyConcurrentSteps(t *testing.T) {
	var term syncBuffer
	tty := NewTTY(&term)
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step := fmt.Sprintf("pull image-%02d", i)
			Begin(tty, step, "")
			for n := int64(0); n <= 20; n++ {
				Advance(tty, step, n*1000, 15000, "bytes") // past its total on purpose
			}
			switch i % 3 {
			case 0:
				End(tty, step, "")
			case 1:
				Failed(tty, step, errors.New("denied"))
			}
			// i%3 == 2: never ended
		}()
	}
	wg.Wait()
	closeWithin(t, tty, 30*time.Second)
	out := term.String()
	assert.Equal(t, 16, strings.Count(out, ": denied ("))
	assert.Equal(t, 16, strings.Count(out, ": stopped before it finished ("))
	assert.Equal(t, 48, strings.Count(out, "✓ ")+strings.Count(out, "✗ "))
	assert.True(t, strings.HasSuffix(out, ShowCursor))
	assert.Len(t, screen(out), 48, "one line per step, no row left:\n%q", out)
}

func TestTTYRedrawsARunningStep(t *testing.T) {
	var term syncBuffer
	tty := NewTTY(&term)
	Begin(tty, "load f.zip into volume v", "16643 images")
	// Advance until mpb has redrawn the row a few times (it redraws every
	// 150 ms); the bound only stops a broken renderer from looping forever.
	deadline := time.Now().Add(20 * time.Second)
	for n := int64(1); len(progresstest.Redraw.FindAllString(term.String(), -1)) < 4; n++ {
		require.True(t, time.Now().Before(deadline), "no redraws in:\n%q", term.String())
		Advance(tty, "load f.zip into volume v", n<<20, 1<<30, "bytes")
		time.Sleep(20 * time.Millisecond)
	}
	End(tty, "load f.zip into volume v", "16643 images")
	closeWithin(t, tty, 20*time.Second)
	out := term.String()

	frames := map[rune]bool{}
	for _, r := range out {
		if strings.ContainsRune(spinnerFrames, r) {
			frames[r] = true
		}
	}
	assert.GreaterOrEqual(t, len(frames), 2, "the spinner turns between redraws")
	assert.Regexp(t, `load f\.zip into volume v +\d+s +\[[=>-]+\] +[\d.]+ MiB / 1\.0 GiB`, out, "a row with a bar and the amounts")
	assert.Equal(t, 1, strings.Count(out, "✓ load f.zip into volume v: 16643 images ("), out)
	assert.Equal(t, []string{"✓ load f.zip into volume v: 16643 images"}, screen(out), "the end line stays, the row goes")
}

func TestTTYRowShowsTheLatestMessage(t *testing.T) {
	var term syncBuffer
	tty := NewTTY(&term)
	Begin(tty, "wait ray-head", "")
	Say(tty, "wait ray-head", "waiting: \x1b[31mconnection refused\x1b[0m\nmore")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(term.String(), "waiting: [31mconnection refused[0m …") {
		require.True(t, time.Now().Before(deadline), "message not drawn:\n%q", term.String())
		time.Sleep(20 * time.Millisecond)
	}
	End(tty, "wait ray-head", "ALIVE")
	closeWithin(t, tty, 20*time.Second)
	out := term.String()
	assert.NotContains(t, out, "\x1b[31m", "a message's own escape sequences are not passed to the terminal")
	assert.NotContains(t, out, "  wait ray-head: waiting", "without --verbose a message is a row, not a line")
}

func TestTTYAfterCloseEventsArePlainLines(t *testing.T) {
	var term syncBuffer
	tty := NewTTY(&term)
	closeWithin(t, tty, 20*time.Second)
	closeWithin(t, tty, 20*time.Second) // twice is fine
	Begin(tty, "late", "")
	End(tty, "late", "")
	Warning(tty, "late warning")
	out := term.String()
	assert.True(t, strings.HasSuffix(out, "✓ late (0s)\n! late warning\n"), "%q", out)
}

func TestTTYRowRateAndETA(t *testing.T) {
	var term syncBuffer
	tty := NewTTY(&term)
	defer closeWithin(t, tty, 20*time.Second)
	t0 := time.Now()
	at := func(d time.Duration, cur, total int64) Event {
		return Event{Time: t0.Add(d), Step: "download", Kind: Update, Current: cur, Total: total, Unit: "bytes"}
	}
	detail := func() string { return tty.steps["download"].snap.Load().detail() }

	tty.Report(at(0, 10<<20, 100<<20))
	assert.Equal(t, "10 MiB / 100 MiB", detail(), "no rate from one sample")
	tty.Report(at(2*time.Second, 30<<20, 100<<20))
	assert.Equal(t, "30 MiB / 100 MiB · 10 MiB/s · ETA 7s", detail())
	tty.Report(at(3*time.Second, 1<<20, 0))
	assert.Equal(t, "1.0 MiB", detail(), "started over with no size: no rate from the old start")
	tty.Report(Event{Time: t0.Add(4 * time.Second), Step: "download", Kind: Update, Message: "retrying"})
	assert.Equal(t, "1.0 MiB · retrying", detail())
}
