package food11

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
)

// checkZip refuses, before any volume is made or touched, a file that is not
// a readable zip, whose entries claim sizes the file cannot hold, whose
// entries do not fit Food-11's layout (traversal, links, other folders), or
// that lacks a whole class (unless o allows it).
func checkZip(path string, o LoadOptions) error {
	zr, err := openZip(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("zip %s: %w", path, err)
	}
	if err := checkSizes(&zr.Reader, fi.Size(), path); err != nil {
		return err
	}
	p, err := makePlan(&zr.Reader, path)
	if err != nil {
		return clierr.WithHint(err, layoutHint)
	}
	return missingClasses(p, path, o)
}

const layoutHint = "use the course's Food-11 zip (the default URL) or pass a zip in its layout: training|validation|evaluation/<class>_<n>.jpg"

// MissingClassesError is a zip in which a split lacks a whole class. The
// load would leave that class's folder empty, and the course's training
// code (torchvision's ImageFolder) refuses an empty class folder, so it is
// refused unless the user asks for it (--allow-missing-classes).
type MissingClassesError struct {
	Zip     string
	Missing []string // split/class_cc without an image, in the course's order
}

func (e *MissingClassesError) Error() string {
	return fmt.Sprintf("%s lacks whole classes: %s ha%s no images (every split needs all %d classes; training's ImageFolder refuses an empty class folder)",
		e.Zip, strings.Join(firstN(e.Missing, 5), ", "), plural(len(e.Missing), "s", "ve"), NumClasses)
}

// missingClasses refuses a plan with a class that has no image in some
// split, unless o allows it; the next step names both ways on.
func missingClasses(p *plan, zipName string, o LoadOptions) error {
	var miss []string
	for _, s := range Splits {
		for i := 0; i < NumClasses; i++ {
			if p.counts[s][i] == 0 {
				miss = append(miss, fmt.Sprintf("%s/class_%02d", s, i))
			}
		}
	}
	if len(miss) == 0 || o.AllowMissingClasses {
		return nil
	}
	again := o.againWords()
	return clierr.WithNext(&MissingClassesError{Zip: zipName, Missing: miss},
		clierr.Next{Text: "load the course's zip with '%s', or this one anyway with '%s'",
			Commands: [][]string{withCourseZip(withoutFlag(again, "--allow-missing-classes", false)), withFlags(again, "--allow-missing-classes")}})
}

// checkEntries reads every image of the plan to its end, as the load will,
// so that archive/zip checks each one's CRC-32 and size: a zip with one
// damaged member is refused while the volume still holds the dataset the
// load would replace. Entries are read by one worker per CPU (at most 4).
func checkEntries(ctx context.Context, p *plan, zipPath string, rep progress.Reporter) error {
	step := "check " + filepath.Base(zipPath)
	progress.Begin(rep, step, fmt.Sprintf("%d images, %s", len(p.entries), progress.Bytes(p.bytes)))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var read atomic.Int64
	jobs := make(chan entry)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for e := range jobs {
				if err := readEntry(e, buf, &read); err != nil {
					cancel(&entryError{name: e.f.Name, err: err})
					return
				}
			}
		}()
	}
	last := time.Now()
feed:
	for _, e := range p.entries {
		select {
		case jobs <- e:
		case <-ctx.Done():
			break feed
		}
		if time.Since(last) > progressEvery {
			progress.Advance(rep, step, read.Load(), p.bytes, "bytes")
			last = time.Now()
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		err = fmt.Errorf("%s: %w", zipPath, err)
		progress.Failed(rep, step, err)
		return err
	}
	progress.Advance(rep, step, read.Load(), p.bytes, "bytes")
	progress.End(rep, step, fmt.Sprintf("%d images, every CRC-32 matches", len(p.entries)))
	return nil
}

// readEntry reads one entry to its end and checks its size.
func readEntry(e entry, buf []byte, read *atomic.Int64) error {
	rc, err := e.f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	// The plain-writer wrapper keeps io.Discard's own small buffer out.
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, rc, buf)
	read.Add(n)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return fmt.Errorf("CRC-32 mismatch, the zip is corrupt: %w", err)
	case err != nil:
		return err
	case n != int64(e.f.UncompressedSize64):
		return fmt.Errorf("%d bytes read, the zip says %d: %w", n, e.f.UncompressedSize64, io.ErrUnexpectedEOF)
	}
	return nil
}

// damaged is the next step for a zip refused by checkEntries: a download is
// fetched again, a local zip replaced; the volume was not touched.
func damaged(err error, o LoadOptions) error {
	again := o.againWords()
	if o.Source.URL != "" {
		return clierr.WithNext(err, clierr.Step("delete the damaged download "+strings.ReplaceAll(o.Zip, "%", "%%")+", then run '%s' to download it again", again...))
	}
	return clierr.WithNext(err, clierr.Step("check the zip file you gave, or load another with '%s'", withSource(again, "--zip", "PATH")...))
}
