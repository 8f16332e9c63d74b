package backup

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// smallObject is the size up to which an object is read whole, ahead of
// its turn, by one of the parallel readers; larger ones stream in turn.
const smallObject = 16 << 20

// fetched is one item ready to be written: its reader, or why not.
type fetched struct {
	item
	r   io.ReadCloser
	err error
}

// prefetch reads items ahead, in parallel, and hands them over in order:
// the archive is one sequential stream, but reading many small objects one
// at a time would leave it waiting on each round trip.
func prefetch(ctx context.Context, items []item, workers int) <-chan fetched {
	if workers < 1 {
		workers = 1
	}
	slots := make([]chan fetched, len(items))
	for i := range slots {
		slots[i] = make(chan fetched, 1)
	}
	out := make(chan fetched)
	sem := make(chan struct{}, workers)
	go func() {
		for i, it := range items {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for _, s := range slots[i:] {
					s <- fetched{err: ctx.Err()}
				}
				return
			}
			go func() {
				slots[i] <- fetchOne(ctx, it)
			}()
		}
	}()
	go func() {
		defer close(out)
		for i := range slots {
			f := <-slots[i]
			<-sem // the next read may start as this one is handed on
			select {
			case out <- f:
			case <-ctx.Done():
				if f.r != nil {
					f.r.Close()
				}
				// drain the rest so no reader is left open
				for _, s := range slots[i+1:] {
					if g := <-s; g.r != nil {
						g.r.Close()
					}
					select {
					case <-sem:
					default:
					}
				}
				return
			}
		}
	}()
	return out
}

func fetchOne(ctx context.Context, it item) fetched {
	r, err := it.reader(ctx)
	if err != nil {
		return fetched{item: it, err: fmt.Errorf("reading %s: %w", it.From, err)}
	}
	if it.data != nil || it.Size > smallObject {
		return fetched{item: it, r: r}
	}
	defer r.Close()
	b := make([]byte, 0, it.Size)
	buf := bytes.NewBuffer(b)
	if _, err := io.Copy(buf, io.LimitReader(r, it.Size+1)); err != nil {
		return fetched{item: it, err: fmt.Errorf("reading %s: %w", it.From, err)}
	}
	return fetched{item: it, r: io.NopCloser(buf)}
}
