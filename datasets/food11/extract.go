package food11

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mltrain/mltrain/internal/progress"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The extractor is this same binary run inside a helper container that
// mounts the dataset volume at /data and the zip read-only: it writes the
// images straight into the volume. The profile of the archive path (a tar
// streamed through the engine) showed the engine's own extraction, dockerd
// plus its docker-untar child, costing about three times the CPU of mltrain
// itself; the extractor moves each byte once from the zip to the volume.
//
// It talks to the host over stdout, one JSON object a line (extractorMsg).

const (
	extractorEnv       = "MLTRAIN_FOOD11_EXTRACTOR" // set: this process is the extractor
	extractorZipEnv    = "MLTRAIN_FOOD11_ZIP"       // the zip, as mounted in the container
	extractorDigestEnv = "MLTRAIN_FOOD11_PLAN"      // planDigest the host computed
	extractorDest      = mountPoint                 // the volume
	progressEvery      = 100 * time.Millisecond
)

// extractorMsg is one line of the extractor's output.
type extractorMsg struct {
	Ready    bool   `json:"ready,omitempty"`    // the zip matches the host's plan; writing starts
	Mismatch string `json:"mismatch,omitempty"` // the zip seen here is not the host's (its digest); nothing written
	Bytes    int64  `json:"bytes,omitempty"`    // image bytes written so far, or in all when Done
	Done     bool   `json:"done,omitempty"`
	Files    int    `json:"files,omitempty"`
	MaxRSS   int64  `json:"maxrss,omitempty"` // the extractor's peak RSS in bytes, when Done
	Error    string `json:"error,omitempty"`
	Entry    string `json:"entry,omitempty"` // the zip entry Error is about
	CRC      bool   `json:"crc,omitempty"`   // Error is a CRC-32 mismatch
	NoSpace  bool   `json:"nospace,omitempty"`
	Need     int64  `json:"need,omitempty"`    // bytes the images take
	Free     int64  `json:"free,omitempty"`    // bytes free on the volume's filesystem, as the extractor sees it
	Size     int64  `json:"size,omitempty"`    // that filesystem's size
	Cleaned  bool   `json:"cleaned,omitempty"` // the partial files were removed
}

// selfExtractor is set once main called ExtractorMain: only then can this
// binary be run as the extractor, so only then does Load use it.
var selfExtractor atomic.Bool

// ExtractorMain must be the first call in main of a binary that loads Food-11
// (and in TestMain of tests that do): in the helper container it runs the
// extractor, writing its protocol to out, and returns (true, exit code) for
// main to exit with; anywhere else it returns (false, 0) and lets Load use
// this binary as the extractor.
func ExtractorMain(out io.Writer) (ran bool, code int) {
	if os.Getenv(extractorEnv) == "" {
		selfExtractor.Store(true)
		return false, 0
	}
	if os.Getenv(extractorClearEnv) != "" {
		return true, runClear(out, extractorDest)
	}
	return true, runExtractor(out, os.Getenv(extractorZipEnv), extractorDest, os.Getenv(extractorDigestEnv))
}

// runExtractor extracts and reports the outcome on out; it returns the
// process's exit code.
func runExtractor(out io.Writer, zipPath, dst, digest string) int {
	enc := json.NewEncoder(out)
	err := extract(context.Background(), enc, zipPath, dst, digest)
	if err == nil {
		return 0
	}
	msg := extractorMsg{Error: err.Error(), CRC: errors.Is(err, zip.ErrChecksum), NoSpace: errors.Is(err, syscall.ENOSPC)}
	var fs *fullError
	if errors.As(err, &fs) {
		msg.Need, msg.Free, msg.Size, msg.Cleaned = fs.need, fs.free, fs.size, fs.cleaned
	}
	var ee *entryError
	if errors.As(err, &ee) {
		msg.Entry, msg.Error = ee.name, ee.err.Error()
	}
	_ = enc.Encode(msg)
	return 1
}

// entryError is an extraction error about one zip entry.
type entryError struct {
	name string
	err  error
}

func (e *entryError) Error() string { return "entry " + e.name + ": " + e.err.Error() }
func (e *entryError) Unwrap() error { return e.err }

// planDigest identifies a plan by what the zip's central directory says of
// each image: target, CRC-32, sizes. Host and extractor compute it on their
// own view of the zip; equal digests mean the container reads the same zip.
func planDigest(p *plan) string {
	h := sha256.New()
	var b [8]byte
	for _, e := range p.entries {
		io.WriteString(h, e.target())
		binary.LittleEndian.PutUint32(b[:4], e.f.CRC32)
		h.Write(b[:4])
		binary.LittleEndian.PutUint64(b[:], e.f.UncompressedSize64)
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], e.f.CompressedSize64)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// extract writes the plan of zipPath under dst when the plan's digest is
// want, reporting on enc. Entries are written by one worker per CPU, each
// with its own buffer, so memory stays bounded whatever the zip's size.
func extract(ctx context.Context, enc *json.Encoder, zipPath, dst, want string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open zip %s: %w", zipPath, err)
	}
	defer zr.Close()
	p, err := makePlan(&zr.Reader, zipPath)
	if err != nil {
		return err
	}
	if d := planDigest(p); d != want {
		return enc.Encode(extractorMsg{Mismatch: d})
	}
	if err := enc.Encode(extractorMsg{Ready: true}); err != nil {
		return err
	}
	// A load that cannot fit is refused before its first byte: a full
	// disk is the user's to free, not a partial dataset to clean.
	if free, size, ok := space(dst); ok && free < p.bytes {
		return &fullError{err: fmt.Errorf("the images need %s: %w", progress.Bytes(p.bytes), syscall.ENOSPC), need: p.bytes, free: free, size: size}
	}
	for _, d := range dirsOf() {
		if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var written atomic.Int64
	jobs := make(chan entry)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for e := range jobs {
				if err := writeEntry(dst, e, buf, &written); err != nil {
					cancel(&entryError{name: e.f.Name, err: err})
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = enc.Encode(extractorMsg{Bytes: written.Load()})
			}
		}
	}()
feed:
	for _, e := range p.entries {
		select {
		case jobs <- e:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(stop)
	<-ticked
	if err := context.Cause(ctx); err != nil {
		// What was written is a partial dataset: remove it, so a full disk
		// is not left full, and say what the disk holds now.
		fe := &fullError{err: err, need: p.bytes, cleaned: os.RemoveAll(filepath.Join(dst, Root)) == nil}
		fe.free, fe.size, _ = space(dst)
		return fe
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return enc.Encode(extractorMsg{Done: true, Files: len(p.entries), Bytes: written.Load(), MaxRSS: ru.Maxrss << 10})
}

// writeEntry copies one entry to its file, reading it to its end so that
// archive/zip checks its CRC-32, and gives it the zip's time.
func writeEntry(dst string, e entry, buf []byte, written *atomic.Int64) error {
	rc, err := e.f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	p := filepath.Join(dst, filepath.FromSlash(e.target()))
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	// The plain-writer wrapper keeps os.File.ReadFrom (32 KiB copies) out.
	n, err := io.CopyBuffer(struct{ io.Writer }{out}, rc, buf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	written.Add(n)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return fmt.Errorf("CRC-32 mismatch, the zip is corrupt: %w", err)
	case err != nil:
		return err
	case n != int64(e.f.UncompressedSize64):
		return fmt.Errorf("%d bytes read, the zip says %d: %w", n, e.f.UncompressedSize64, io.ErrUnexpectedEOF)
	}
	mod := e.f.Modified
	if mod.IsZero() {
		mod = time.Unix(0, 0)
	}
	return os.Chtimes(p, mod, mod)
}

// dirsOf is every folder of the layout, even an empty class, as the course's
// loader makes them.
func dirsOf() []string {
	out := []string{Root}
	for _, s := range Splits {
		out = append(out, Root+"/"+s)
		for i := 0; i < NumClasses; i++ {
			out = append(out, fmt.Sprintf("%s/%s/class_%02d", Root, s, i))
		}
	}
	return out
}

// fullError is an extraction error with the volume's filesystem as the
// extractor saw it, and whether the partial files were removed.
type fullError struct {
	err              error
	need, free, size int64
	cleaned          bool
}

func (e *fullError) Error() string { return e.err.Error() }
func (e *fullError) Unwrap() error { return e.err }

// space is the free and total bytes of the filesystem holding dir.
func space(dir string) (free, size int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, true
}
