package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/mltrain/mltrain/datasets/food11"
)

// DataLoad asks up to load the Food-11 volume while it pulls and builds
// images, so a fresh node waits for the longer of the two, not their sum.
// Its Volume is the plan's; the rest is `mltrain data food11`'s options.
type DataLoad = food11.Options

// imagesAndDataStep runs the images step and, when asked, the dataset load
// at the same time, each reporting its own progress. A failure of either
// stops the other: images already pulled or built stay (a re-run finds
// them), and a load stopped half-way leaves no manifest, so the next load
// empties the volume and starts over.
func imagesAndDataStep(load *DataLoad) func(ctx context.Context, r *run) (string, error) {
	return func(ctx context.Context, r *run) (string, error) {
		if load == nil {
			return imagesStep(ctx, r)
		}
		o := *load
		o.Volume, o.Reporter = r.plan.DataVolume, r.deps.Reporter
		if o.CacheDir == "" {
			o.CacheDir = r.dir.File("cache")
		}
		if o.Lock.Command == "" {
			o.Lock.Command = r.cmds.Again()
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var data food11.Result
		var dataErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			if data, dataErr = food11.Run(ctx, r.deps.Engine, o); dataErr != nil {
				cancel(dataErr)
			}
		}()
		msg, imgErr := imagesStep(ctx, r)
		if imgErr != nil {
			cancel(imgErr)
		}
		<-done
		// Which failed first is the context's cause: the other one's error
		// then only says it was stopped.
		first := context.Cause(ctx)
		switch {
		case dataErr != nil && (imgErr == nil || first == dataErr):
			return "", fmt.Errorf("dataset volume %s: %w (images: %s)", o.Volume, dataErr, keptImages(r))
		case imgErr != nil && (dataErr == nil || first == imgErr):
			return "", fmt.Errorf("%w (the Food-11 load into volume %s stopped with it; the next load starts it over)", imgErr, o.Volume)
		case imgErr != nil:
			return "", errors.Join(imgErr, fmt.Errorf("dataset volume %s: %w", o.Volume, dataErr))
		}
		what := "loaded"
		if data.NoOp {
			what = "already loaded"
		}
		return fmt.Sprintf("%s; Food-11 %s into %s", msg, what, o.Volume), nil
	}
}

// keptImages says what the images step left in place when the dataset
// load stopped it.
func keptImages(r *run) string {
	n := len(r.res.Images.Present) + len(r.res.Images.Pulled) + len(r.res.Images.Built) + len(r.res.Images.UpToDate)
	return fmt.Sprintf("%d in place and kept, the rest stopped; a re-run goes on from there", n)
}
