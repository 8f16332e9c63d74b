// Command mltrain turns one leased GPU node into a verified Ray training lab.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

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

// withSignals returns a context that SIGINT or SIGTERM cancels with the
// signal as its cause, so commands stop, clean up and return, and main says
// what was interrupted. A second signal ends the process at once (a command
// stuck in its cleanup), after showing the cursor the live view hid.
func withSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
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
