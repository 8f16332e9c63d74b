// Command mltrain turns one leased GPU node into a verified Ray training lab.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
)

// version is set at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if ran, code := food11.ExtractorMain(os.Stdout); ran {
		os.Exit(code) // this process was the dataset extractor inside a helper container
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		if !clierr.IsSilent(err) {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			if h := clierr.Hint(err); h != "" {
				fmt.Fprintf(os.Stderr, "Next: %s\n", h)
			}
		}
		os.Exit(clierr.Code(err))
	}
}
