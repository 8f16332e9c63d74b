package food11

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// LoadOptions says which zip goes into which volume.
type LoadOptions struct {
	Zip    string // path of the Food-11 zip
	Source Source // URL (if downloaded) and SHA256 (computed when empty)
	Volume string // DefaultVolume when empty
	Force  bool   // rebuild even when the volume already holds this zip
	Strict bool   // counts that differ from the published Food-11 are an error
	Method string // MethodAuto, MethodExtractor or MethodArchive
	// AllowMissingClasses loads a zip in which a split lacks a whole class
	// (an empty class folder) instead of refusing it.
	AllowMissingClasses bool

	HelperImage string            // DefaultHelperImage when empty
	Labels      map[string]string // extra labels on the volume, helper image and container
	Reporter    progress.Reporter
	Lock        LockOptions // who loads, and whether to wait for another load of the volume

	again []string // the user's command as words, for next steps (set by Run)
}

// againWords is the load as command words for next steps: Run's, or a
// load of the zip into the volume.
func (o LoadOptions) againWords() []string {
	return againOf(o.again, "--zip", o.Zip, "--volume", o.Volume)
}

// LoadResult says what a load did.
type LoadResult struct {
	Volume   string   `json:"volume"`
	Manifest Manifest `json:"manifest"`
	NoOp     bool     `json:"noop"`               // the volume already held this zip; nothing was written
	Rebuilt  bool     `json:"rebuilt"`            // the volume was emptied first (stale, other source, --force)
	Warnings []string `json:"warnings,omitempty"` // counts that differ from the published Food-11
	Method   string   `json:"method,omitempty"`   // how the images were written: MethodExtractor or MethodArchive
	// HelperPeakRSS is the extractor's peak resident memory in bytes (it runs
	// in the helper container, outside mltrain's own RSS).
	HelperPeakRSS int64 `json:"helper_peak_rss,omitempty"`
}

// Load puts the zip's images into the volume in the course's layout. It is
// idempotent: a volume whose manifest names the same zip digest is left alone
// (unless Force); a volume with a partial load (no manifest) is emptied and
// loaded again.
func Load(ctx context.Context, eng docker.Engine, o LoadOptions) (LoadResult, error) {
	if o.Volume == "" {
		o.Volume = DefaultVolume
	}
	lk, err := lockVolume(ctx, o.Volume, o.Lock, o.Reporter)
	if err != nil {
		return LoadResult{Volume: o.Volume}, err
	}
	defer lk.Release()
	if err := checkZip(o.Zip, o); err != nil { // before the volume is made
		return LoadResult{Volume: o.Volume}, err
	}
	h, err := openHelper(ctx, eng, o.Volume, o.HelperImage, o.Labels, true)
	if err != nil {
		return LoadResult{Volume: o.Volume}, err
	}
	defer h.close()
	h.again = o.againWords()
	m, err := h.readManifest(ctx)
	if err != nil {
		return LoadResult{Volume: o.Volume}, err
	}
	return load(ctx, h, m, o)
}

// load is Load with the helper open and the current manifest (nil if none) read.
func load(ctx context.Context, h *helper, cur *Manifest, o LoadOptions) (LoadResult, error) {
	res := LoadResult{Volume: o.Volume}
	rep := o.Reporter
	again := o.againWords()
	h.again = again
	if o.Method != MethodAuto && o.Method != MethodExtractor && o.Method != MethodArchive {
		return res, clierr.Hintf(fmt.Sprintf("use %q, %q or leave it empty", MethodExtractor, MethodArchive), "unknown load method %q", o.Method)
	}
	zr, err := openZip(o.Zip)
	if err != nil {
		return res, err
	}
	defer zr.Close()
	src := o.Source
	if src.File == "" {
		src.File = filepath.Base(o.Zip)
	}
	if src.Size == 0 {
		if fi, err := os.Stat(o.Zip); err == nil {
			src.Size = fi.Size()
		}
	}
	if src.SHA256 == "" {
		if src.SHA256, err = HashFile(ctx, o.Zip, rep); err != nil {
			return res, err
		}
	}
	if cur != nil && !o.Force && strings.EqualFold(cur.Source.SHA256, src.SHA256) {
		res.NoOp, res.Manifest = true, *cur
		res.Warnings = CheckCanonical(cur.Counts)
		return res, strictErr(o.Strict, o.Volume, res.Warnings, again)
	}

	// Check the whole zip from its central directory before touching the volume.
	p, err := makePlan(&zr.Reader, o.Zip)
	if err != nil {
		return res, clierr.WithHint(err, layoutHint)
	}
	if err := missingClasses(p, o.Zip, o); err != nil {
		return res, err
	}
	res.Warnings = CheckCanonical(p.counts)
	if o.Strict && len(res.Warnings) > 0 {
		return res, clierr.WithNext(fmt.Errorf("%s does not match the published Food-11 (--strict): %s", o.Zip, strings.Join(res.Warnings, "; ")),
			clierr.Next{Text: "load it anyway with '%s', or the course's zip with '%s'",
				Commands: [][]string{withoutFlag(again, "--strict", false), withCourseZip(again)}})
	}
	if p.skipped > 0 {
		progress.Note(rep, fmt.Sprintf("ignored %d macOS metadata entries in %s", p.skipped, filepath.Base(o.Zip)))
	}

	// A Food-11 folder without the manifest of this zip is a partial load, an
	// older source, or the course's own loader: start from an empty volume.
	stale := cur != nil
	if !stale {
		if stale, err = h.exists(ctx, Root); err != nil {
			return res, err
		}
	}
	if stale {
		if !h.labelled && !o.Force {
			return res, &RerunError{Err: fmt.Errorf("volume %s already holds a %s folder that mltrain did not load (no mltrain label or manifest)", o.Volume, Root),
				Do: "to replace the volume's content add --force (or load into another volume with --volume NAME)", Force: true}
		}
		// A complete dataset, mltrain's or another loader's, is replaced
		// only by a zip known to be whole: every image is read and its
		// CRC-32 checked before the volume is emptied.
		if cur != nil || !h.labelled {
			if err := checkEntries(ctx, p, o.Zip, rep); err != nil {
				return res, damaged(fmt.Errorf("%w; volume %s was not touched", err, o.Volume), o)
			}
		}
		progress.Note(rep, fmt.Sprintf("emptying volume %s before loading (%s)", o.Volume, staleReason(cur, o.Force)))
		if err := h.empty(ctx); err != nil {
			return res, err
		}
		res.Rebuilt = true
	}

	step := fmt.Sprintf("load %s into volume %s", filepath.Base(o.Zip), o.Volume)
	progress.Begin(rep, step, fmt.Sprintf("%d images, %s", len(p.entries), progress.Bytes(p.bytes)))
	if res.Method, res.HelperPeakRSS, err = h.write(ctx, p, o, step); err != nil {
		progress.Failed(rep, step, err)
		return res, err
	}
	m := Manifest{
		Format: ManifestFormat, Dataset: "food11", Layout: Layout, Source: src,
		Counts: p.counts, Files: len(p.entries), Bytes: p.bytes, LoadedAt: time.Now().UTC(),
	}
	// Last: only a completed load has a manifest.
	if err := h.writeManifest(ctx, m); err != nil {
		progress.Failed(rep, step, err)
		return res, err
	}
	progress.End(rep, step, fmt.Sprintf("%d images", m.Files))
	res.Manifest = m
	return res, nil
}

// strictErr is the --strict verdict on a volume left as it was; again is
// the user's command as words.
func strictErr(strict bool, volume string, warnings []string, again []string) error {
	if !strict || len(warnings) == 0 {
		return nil
	}
	return clierr.WithNext(fmt.Errorf("volume %s does not match the published Food-11 (--strict): %s", volume, strings.Join(warnings, "; ")),
		clierr.Next{Text: "load the course's zip with '%s', or keep this one with '%s'",
			Commands: [][]string{withFlags(withCourseZip(again), "--force"), withoutFlag(again, "--strict", false)}})
}

func staleReason(cur *Manifest, force bool) string {
	switch {
	case force:
		return "--force"
	case cur != nil:
		return "it holds another zip, sha256 " + short(cur.Source.SHA256)
	default:
		return "an earlier load did not complete"
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// openZip opens a zip with errors that say what is wrong with the file.
func openZip(p string) (*zip.ReadCloser, error) {
	zr, err := zip.OpenReader(p)
	if err == nil {
		return zr, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, clierr.WithHint(fmt.Errorf("zip %s: %w", p, err), "check the path given to --zip")
	}
	if errors.Is(err, zip.ErrFormat) {
		return nil, clierr.WithHint(fmt.Errorf("%s is not a zip file, or is truncated (no zip central directory found): %w", p, err),
			"download it again (delete the cached copy), or check the zip file you gave")
	}
	return nil, fmt.Errorf("open zip %s: %w", p, err)
}

// write puts the plan's images into the volume by o.Method; MethodAuto
// takes the extractor when it can start and the archive API otherwise.
func (h *helper) write(ctx context.Context, p *plan, o LoadOptions, step string) (method string, maxRSS int64, err error) {
	switch o.Method {
	case MethodAuto, MethodExtractor:
		maxRSS, err = h.extract(ctx, p, o.Zip, o.Reporter, step)
		if err == nil || !errors.Is(err, errNoExtractor) {
			return MethodExtractor, maxRSS, err
		}
		if o.Method == MethodExtractor {
			return MethodExtractor, 0, clierr.WithHint(fmt.Errorf("load into volume %s: %w", h.volume, err), "use the default load method, or check that the Docker engine runs on this host (it must see the zip's path)")
		}
		progress.Note(o.Reporter, fmt.Sprintf("streaming through the engine's archive API (slower): %v", err))
	}
	return MethodArchive, 0, h.stream(ctx, p, o.Zip, o.Reporter, step)
}

// stream sends the plan to the volume as one tar, read from the zip entry by
// entry: memory stays bounded whatever the zip's size. The daemon extracts
// as it reads.
func (h *helper) stream(ctx context.Context, p *plan, zipName string, rep progress.Reporter, step string) error {
	pr, pw := io.Pipe()
	type result struct {
		err  error
		done bool // every entry was written; only the tar trailer may be missing
	}
	resc := make(chan result, 1)
	go func() {
		done, err := writeTar(ctx, pw, p, zipName, rep, step)
		pw.CloseWithError(err) // nil: the reader sees EOF
		resc <- result{err, done}
	}()
	cerr := h.eng.CopyToContainer(ctx, h.id, mountPoint, pr)
	pr.CloseWithError(errCopyEnded) // unblock the writer if the engine stopped reading
	w := <-resc
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("load into volume %s interrupted: %w", h.volume, ctx.Err())
	case w.err != nil && !errors.Is(w.err, errCopyEnded):
		return w.err // the zip's fault (CRC, truncation): the real cause
	case cerr != nil && strings.Contains(cerr.Error(), "no space left on device"):
		// The engine's archive API cannot delete: the next load empties the
		// volume first, and the message says so.
		ns := &NoSpaceError{Volume: h.volume, Need: p.bytes}
		h.nameFilesystem(ns)
		return &RerunError{Err: fmt.Errorf("%w (partial files remain until the next load empties the volume; engine: %v)", ns, cerr),
			Do: "free space on that filesystem, or load into a volume on a bigger disk with --volume NAME"}
	case cerr != nil:
		return &RerunError{Err: fmt.Errorf("load into volume %s: %w", h.volume, cerr), Do: "check the volume's disk"}
	case w.err != nil && !w.done:
		return fmt.Errorf("load into volume %s: %w", h.volume, w.err)
	}
	return nil
}

// writeTar writes the plan's directories and images as a tar to w. done is
// true once every image was written (the trailer may still have failed).
func writeTar(ctx context.Context, w io.Writer, p *plan, zipName string, rep progress.Reporter, step string) (done bool, err error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	tw := tar.NewWriter(bw)
	now := time.Now()
	for _, d := range dirsOf() {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now}); err != nil {
			return false, err
		}
	}
	buf := make([]byte, 256<<10)
	var written int64
	last := time.Now()
	for _, e := range p.entries {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := copyEntry(tw, e, buf); err != nil {
			return false, fmt.Errorf("%s: entry %s: %w", zipName, e.f.Name, err)
		}
		written += int64(e.f.UncompressedSize64)
		if time.Since(last) > 100*time.Millisecond {
			progress.Advance(rep, step, written, p.bytes, "bytes")
			last = time.Now()
		}
	}
	progress.Advance(rep, step, written, p.bytes, "bytes")
	if err := tw.Close(); err != nil {
		return true, err
	}
	return true, bw.Flush()
}

// copyEntry copies one zip entry into the tar. It reads the entry to its end,
// because archive/zip checks the CRC-32 only there: a corrupt entry fails
// here and the whole load aborts before any manifest is written.
func copyEntry(tw *tar.Writer, e entry, buf []byte) error {
	rc, err := e.f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	mod := e.f.Modified
	if mod.IsZero() {
		mod = time.Unix(0, 0)
	}
	size := int64(e.f.UncompressedSize64)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.target(), Size: size, Mode: 0o644, ModTime: mod}); err != nil {
		return err
	}
	n, err := io.CopyBuffer(tw, rc, buf)
	if err != nil {
		if errors.Is(err, zip.ErrChecksum) {
			return fmt.Errorf("CRC-32 mismatch, the zip is corrupt: %w", err)
		}
		return err
	}
	if n != size {
		return fmt.Errorf("%d bytes read, the zip says %d: %w", n, size, io.ErrUnexpectedEOF)
	}
	return nil
}

// HashFile returns the hex SHA-256 of a file.
func HashFile(ctx context.Context, p string, rep progress.Reporter) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", clierr.WithHint(fmt.Errorf("zip %s: %w", p, err), "check the path given to --zip")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	step := "checksum " + filepath.Base(p)
	progress.Begin(rep, step, progress.Bytes(fi.Size()))
	hsh := sha256.New()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		k, err := f.Read(buf)
		hsh.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
		}
		if n%(64<<20) < int64(len(buf)) {
			progress.Advance(rep, step, n, fi.Size(), "bytes")
		}
	}
	sum := hex.EncodeToString(hsh.Sum(nil))
	progress.End(rep, step, "sha256 "+sum)
	return sum, nil
}
