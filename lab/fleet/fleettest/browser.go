package fleettest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Page is what headless Chromium made of an HTML file.
type Page struct {
	Text       string   // document.body.innerText: what a reader sees
	PrintText  string   // the same with the print stylesheet: what a printout shows
	Problems   []string // console errors and warnings, uncaught exceptions, refused loads
	Fetches    int      // resources the page loaded besides itself
	Screenshot string   // a PNG of the whole page, kept after the test
	// Values are the numbers Options.Eval's expressions gave, on screen.
	Values map[string]float64
}

// Options tune OpenWith.
type Options struct {
	// Width of the window in CSS pixels (default 1280).
	Width int
	// Eval are JavaScript expressions giving numbers (a width, an element's
	// right edge), evaluated on screen after the load.
	Eval map[string]string
}

// Chromium finds Debian's chromium: under CI it must be there (.ci/run
// installs it); elsewhere the test is skipped without it.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: no browser")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH: apt-get install chromium")
	return ""
}

// ArtifactDir is where tests keep files for people to look at afterwards:
// $MLTRAIN_TEST_ARTIFACTS, or mltrain-test-artifacts in the temp dir.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MLTRAIN_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "mltrain-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Open loads file in headless Chromium, collects every console message of
// level warning or error, every exception and every browser log entry of
// those levels (a refused or failed load), reads the visible text and
// the resources fetched, and saves a full-page screenshot as name.png in
// ArtifactDir.
func Open(t testing.TB, file, name string) Page {
	t.Helper()
	return OpenWith(t, file, name, Options{})
}

// OpenWith is Open in a window o.Width wide, evaluating o.Eval.
func OpenWith(t testing.TB, file, name string, o Options) Page {
	t.Helper()
	if o.Width == 0 {
		o.Width = 1280
	}
	bin := Chromium(t)
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.NoSandbox, // tests run as root in CI containers, where Chromium's sandbox cannot start
		chromedp.WindowSize(o.Width, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	// Start the browser and subscribe before loading, so no message is lost;
	// read the messages while the page loads.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	mctx, stopMessages := context.WithCancel(ctx)
	messages := chromedp.Console(mctx)
	var p Page
	read := make(chan struct{})
	go func() {
		defer close(read)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				p.Problems = append(p.Problems, fmt.Sprintf("%s %s: %s %s", m.Source, m.Type, m.Text, m.URL))
			}
		}
	}()
	err = chromedp.Do(ctx, chromedp.Navigate("file://"+abs),
		chromedp.Sleep(500*time.Millisecond)) // a refused load is reported just after the page's load event
	if err == nil {
		p.Text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	}
	for k, expr := range o.Eval {
		if err != nil {
			break
		}
		if p.Values == nil {
			p.Values = map[string]float64{}
		}
		p.Values[k], err = chromedp.Run(ctx, chromedp.Evaluate[float64](expr))
	}
	if err == nil {
		p.Fetches, err = chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("resource").length`))
	}
	var shot []byte
	if err == nil {
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	}
	if err == nil { // last: the page stays in print media
		err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
			return err
		}))
	}
	if err == nil {
		p.PrintText, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	}
	stopMessages()
	<-read
	if err != nil {
		t.Fatalf("chromium on %s: %v", file, err)
	}
	p.Screenshot = filepath.Join(ArtifactDir(t), name+".png")
	if err := os.WriteFile(p.Screenshot, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s", file, p.Screenshot)
	return p
}
