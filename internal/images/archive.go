package images

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// SaveResult says what went into the archive.
type SaveResult struct {
	File    string   `json:"file"`
	Saved   []string `json:"saved"`
	Missing []string `json:"missing"` // candidates not on this host, left out
	Bytes   int64    `json:"bytes"`
}

// Save writes every image of refs that is present on this host into one tar
// archive at file (the `docker save` format, so `docker load` reads it too).
// The archive is written beside file and renamed into place when complete,
// so an interrupted save never leaves a truncated file under that name.
func Save(ctx context.Context, eng docker.Engine, refs []string, file string, r progress.Reporter) (SaveResult, error) {
	res := SaveResult{File: file}
	var total int64
	for _, ref := range Dedupe(refs) {
		img, err := eng.ImageInspect(ctx, ref)
		switch {
		case err == nil:
			res.Saved = append(res.Saved, ref)
			total += img.Size
		case docker.IsNotFound(err):
			res.Missing = append(res.Missing, ref)
		default:
			return res, fmt.Errorf("inspect image %s: %w", ref, err)
		}
	}
	if len(res.Saved) == 0 {
		return res, clierr.Mark(fmt.Errorf("none of the lab's images is on this host, nothing to save (looked for %d images)", len(res.Missing)), ErrNothingToSave)
	}
	dir := filepath.Dir(file)
	// The archive appears whole or not at all; 0600 as the temp file always was.
	tmp, err := atomicfile.Create(file, 0o600)
	if err != nil {
		return res, clierr.WithHint(fmt.Errorf("create images archive in %s: %w", dir, err), "choose a FILE in a writable directory with enough free space")
	}
	defer tmp.Abort() // no-op after Commit
	step := "save " + file
	progress.Begin(r, step, fmt.Sprintf("%d images", len(res.Saved)))
	cw := &countingWriter{w: tmp, onWrite: func(n int64) { progress.Advance(r, step, n, max(total, n), "bytes") }}
	bw := bufio.NewWriterSize(cw, 1<<20)
	err = eng.ImageSave(ctx, res.Saved, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Commit()
	}
	if err != nil {
		err = fmt.Errorf("save images to %s: %w", file, err)
		progress.Failed(r, step, err)
		return res, err
	}
	res.Bytes = cw.n
	progress.Advance(r, step, cw.n, cw.n, "bytes")
	progress.End(r, step, "")
	return res, nil
}

// manifestEntry is one image in a `docker save` archive's manifest.json.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// What went wrong with an images archive, for the layer that knows the
// user's command to say what to do next (errors.Is).
var (
	// ErrNothingToSave: none of the images to save is on this host.
	ErrNothingToSave = errors.New("no image to save")
	// ErrNoArchive: the archive to load cannot be opened.
	ErrNoArchive = errors.New("images archive cannot be opened")
	// ErrBadArchive: the archive is incomplete or the engine refused it
	// (a *CorruptArchiveError is one).
	ErrBadArchive = errors.New("images archive unusable")
)

// CorruptArchiveError says file is not a complete image archive.
type CorruptArchiveError struct {
	File string
	Err  error
}

func (e *CorruptArchiveError) Error() string {
	return fmt.Sprintf("%s is not a complete image archive (as an images save or 'docker save' writes it): %v", e.File, e.Err)
}
func (e *CorruptArchiveError) Unwrap() error        { return e.Err }
func (e *CorruptArchiveError) Is(target error) bool { return target == ErrBadArchive }

// Load loads an archive made by Save (or docker save; plain or gzip). The
// whole archive is checked first (a complete tar whose manifest names files
// it holds), so a corrupt or truncated file is refused before the engine
// sees it; if the engine still fails, tags the load created are removed, so
// nothing is left half-tagged. It returns the tags loaded.
func Load(ctx context.Context, eng docker.Engine, file string, r progress.Reporter) ([]string, error) {
	step := "load " + file
	progress.Begin(r, step, "checking the archive")
	entries, err := checkArchive(file)
	if err != nil {
		progress.Failed(r, step, err)
		return nil, err
	}
	var tags []string
	for _, e := range entries {
		tags = append(tags, e.RepoTags...)
	}
	sort.Strings(tags)
	before := map[string]string{} // tag -> image ID it pointed at before the load
	for _, t := range tags {
		if img, err := eng.ImageInspect(ctx, t); err == nil {
			before[t] = img.ID
		}
	}
	f, err := os.Open(file)
	if err != nil {
		progress.Failed(r, step, err)
		return nil, fmt.Errorf("open images archive %s: %w", file, err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	progress.Say(r, step, fmt.Sprintf("loading %d images", len(entries)))
	cr := &countingReader{r: f, onRead: func(n int64) { progress.Advance(r, step, n, max(size, n), "bytes") }}
	if _, err := eng.ImageLoad(ctx, cr); err != nil {
		undoTags(ctx, eng, tags, before)
		err = clierr.Mark(fmt.Errorf("load images from %s: %w", file, err), ErrBadArchive)
		progress.Failed(r, step, err)
		return nil, err
	}
	for _, t := range tags {
		if _, err := eng.ImageInspect(ctx, t); err != nil {
			undoTags(ctx, eng, tags, before)
			err = fmt.Errorf("load images from %s: %s is not on the engine after the load: %w", file, t, err)
			progress.Failed(r, step, err)
			return nil, err
		}
	}
	progress.End(r, step, fmt.Sprintf("%d images", len(tags)))
	return tags, nil
}

// undoTags removes tags a failed load created (tags that existed before are
// left alone; the engine only retags them on success).
func undoTags(ctx context.Context, eng docker.Engine, tags []string, before map[string]string) {
	for _, t := range tags {
		if _, existed := before[t]; existed {
			continue
		}
		_ = eng.ImageRemove(context.WithoutCancel(ctx), t) // best effort; the load error is what matters
	}
}

// checkArchive reads the whole archive and returns its manifest, or a
// *CorruptArchiveError saying what is wrong.
func checkArchive(file string) ([]manifestEntry, error) {
	bad := func(err error) error {
		return &CorruptArchiveError{File: file, Err: err}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, clierr.Mark(fmt.Errorf("open images archive: %w", err), ErrNoArchive)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, bad(err)
		}
		defer gz.Close()
		in = gz
	}
	tr := tar.NewReader(in)
	names := map[string]bool{}
	var manifest []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad(fmt.Errorf("after %d entries: %w", len(names), err))
		}
		name := path.Clean(h.Name)
		names[name] = true
		if name == "manifest.json" {
			if manifest, err = io.ReadAll(io.LimitReader(tr, 64<<20)); err != nil {
				return nil, bad(fmt.Errorf("manifest.json: %w", err))
			}
			continue
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return nil, bad(fmt.Errorf("entry %s: %w", h.Name, err))
		}
	}
	if len(names) == 0 {
		return nil, bad(errors.New("it holds no files"))
	}
	if manifest == nil {
		return nil, bad(errors.New("it has no manifest.json (an incomplete copy?)"))
	}
	var entries []manifestEntry
	if err := json.Unmarshal(manifest, &entries); err != nil {
		return nil, bad(fmt.Errorf("manifest.json: %w", err))
	}
	if len(entries) == 0 {
		return nil, bad(errors.New("its manifest.json lists no image"))
	}
	for _, e := range entries {
		for _, p := range append([]string{e.Config}, e.Layers...) {
			if !names[path.Clean(p)] {
				return nil, bad(fmt.Errorf("manifest.json names %s, which the archive does not hold", p))
			}
		}
	}
	return entries, nil
}

// reportEvery throttles byte progress: renderers need a few updates a
// second, not one per read.
const reportEvery = 4 << 20

type countingWriter struct {
	w       io.Writer
	n, last int64
	onWrite func(int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if c.n-c.last >= reportEvery {
		c.last = c.n
		c.onWrite(c.n)
	}
	return n, err
}

type countingReader struct {
	r       io.Reader
	n, last int64
	onRead  func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n-c.last >= reportEvery || (err == io.EOF && c.n > c.last) {
		c.last = c.n
		c.onRead(c.n)
	}
	return n, err
}
