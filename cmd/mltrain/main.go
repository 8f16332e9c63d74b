// Command mltrain turns one leased GPU node into a verified Ray training lab.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/progress"
)

func main() {
	if ran, code := food11.ExtractorMain(os.Stdout); ran {
		os.Exit(code) // this process was the dataset extractor inside a helper container
	}
	ctx, stop := withSignals(context.Background())
	a := newApp(os.Stdout, os.Stderr)
	err := a.root().ExecuteContext(ctx)
	stop()
	os.Exit(report(os.Stderr, interrupted(ctx, err, os.Args[1:])))
}

// withSignals returns a context that SIGINT, SIGTERM or SIGHUP (a dropped
// SSH session) cancels with the signal as its cause, so commands stop,
// clean up (start a stopped worker again, end their Ray jobs) and return,
// and main says what was interrupted. A second signal gives that cleanup
// secondSignalGrace more, then ends the process (a command stuck in its
// cleanup); a third ends it at once. Either way the cursor the live view
// hid is shown again.
func withSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(signalled{s.(syscall.Signal)})
		case <-done:
			return
		}
		select {
		case s := <-ch:
			if liveTerminal(os.Stderr) {
				_, _ = os.Stderr.WriteString(progress.ShowCursor + "\n")
			}
			_, _ = fmt.Fprintf(os.Stderr, "received %s again: cleaning up for at most %s more (once more ends mltrain at once)\n",
				s.(syscall.Signal), secondSignalGrace)
			select {
			case <-ch:
			case <-time.After(secondSignalGrace):
			case <-done:
				return
			}
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// secondSignalGrace is how long a second signal leaves the cleanup.
const secondSignalGrace = 10 * time.Second
