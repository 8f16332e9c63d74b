// Command mltrain turns one leased GPU node into a verified Ray training lab.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
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
			_, _ = os.Stderr.WriteString(forcedExit(s.(syscall.Signal), os.Args[1:]))
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

// forcedExit is what mltrain says when a signal ends it before its cleanup
// finished: that something may be left, how to see it, and the command to
// run again (a lab's up and down converge from whatever is in place).
func forcedExit(sig syscall.Signal, args []string) string {
	rerun := rerunLine(redactBundles(args))
	return fmt.Sprintf("Error: received %s again: %s ended before its cleanup finished; what it was undoing may be left in place\n"+
		"Next: see what is left with '%s', then run '%s' again (it starts from whatever is in place)\n",
		sig, rerun, rerunLine(append(labNaming(args), "status")), rerun)
}

// labNaming are the global flags in args that name the lab.
func labNaming(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		for _, f := range []string{"--project", "--state-dir"} {
			switch {
			case strings.HasPrefix(a, f+"="):
				out = append(out, a)
			case a == f && i+1 < len(args):
				out = append(out, a, args[i+1])
				i++
			}
		}
	}
	return out
}

// secondSignalGrace is how long a second signal leaves the cleanup.
const secondSignalGrace = 10 * time.Second
