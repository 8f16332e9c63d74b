package backup

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/pgzip"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
)

// writeArchive streams items into a .tar.gz at dest, manifest.json last.
// It writes a temp file beside dest and renames it only once complete, so a
// backup cut short (Ctrl-C, a full disk, a lost MinIO) leaves no dest.
func writeArchive(ctx context.Context, dest string, items []item, m Manifest, o Options) (Manifest, error) {
	dir := filepath.Dir(dest)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".partial-*")
	if err != nil {
		return Manifest{}, clierr.WithHint(fmt.Errorf("backup file %s: %w", dest, err), "pass a path in a writable directory")
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return Manifest{}, err
	}
	zw, err := pgzip.NewWriterLevel(f, o.level())
	if err != nil {
		return Manifest{}, err
	}
	// 1 MiB blocks, one per core: pgzip's parallelism.
	if err := zw.SetConcurrency(1<<20, o.workers()); err != nil {
		return Manifest{}, err
	}
	tw := tar.NewWriter(zw)
	m, err = writeEntries(ctx, tw, items, m, o)
	if err != nil {
		return Manifest{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	b = append(b, '\n')
	hdr := &tar.Header{Name: ManifestName, Mode: 0o600, Size: int64(len(b)), ModTime: m.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return Manifest{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	if _, err := tw.Write(b); err != nil {
		return Manifest{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	for _, c := range []func() error{tw.Close, zw.Close, f.Sync, f.Close} {
		if err := c(); err != nil {
			return Manifest{}, fmt.Errorf("backup to %s: %w", dest, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return Manifest{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	done = true
	return m, nil
}

// writeEntries writes each item as a tar entry, hashing it as it goes, and
// returns the manifest with every entry's sha256.
func writeEntries(ctx context.Context, tw *tar.Writer, items []item, m Manifest, o Options) (Manifest, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := prefetch(ctx, items, o.workers())
	defer func() { // close what was fetched but not written
		cancel()
		for f := range ch {
			if f.r != nil {
				f.r.Close()
			}
		}
	}()
	var total, done int64
	for _, it := range items {
		total += it.Size
	}
	step := "backup"
	progress.Begin(o.Reporter, step, "backing up "+humanize.IBytes(uint64(total)))
	last := time.Now()
	for f := range ch {
		if f.err != nil {
			progress.Failed(o.Reporter, step, f.err)
			return Manifest{}, f.err
		}
		hdr := &tar.Header{Name: f.Path, Mode: int64(f.mode()), Size: f.Size, ModTime: f.ModTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			f.r.Close()
			return Manifest{}, err
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(ctxReader{ctx, f.r}, f.Size))
		f.r.Close()
		if err == nil && n != f.Size {
			err = fmt.Errorf("%s changed while it was read: %d bytes, listed with %d", f.From, n, f.Size)
		}
		if err != nil {
			progress.Failed(o.Reporter, step, err)
			return Manifest{}, err
		}
		e := f.Entry
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
		m.Entries = append(m.Entries, e)
		done += n
		if time.Since(last) > 200*time.Millisecond {
			progress.Advance(o.Reporter, step, done, total, "bytes")
			last = time.Now()
		}
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, err
	}
	progress.Advance(o.Reporter, step, done, total, "bytes")
	progress.End(o.Reporter, step, fmt.Sprintf("%d files, %s", len(m.Entries), humanize.IBytes(uint64(done))))
	return m, nil
}

func (e Entry) mode() uint32 {
	if e.Mode == 0 {
		return 0o644
	}
	return e.Mode
}

// ctxReader stops a copy when ctx ends (Ctrl-C): a local file read never
// notices a cancelled context by itself.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// archiveEntries reads a .tar.gz (klauspost/compress's gzip: pgzip's
// reader panics in WriteTo after a partial Read, v1.2.6), calling fn with each file entry and its
// content; the manifest is returned when it is met.
func archiveEntries(ctx context.Context, src string, fn func(hdr *tar.Header, r io.Reader) error) (*Manifest, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, clierr.WithHint(fmt.Errorf("backup %s: %w", src, err), "pass the path of a backup made by 'mltrain backup FILE.tar.gz'")
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("backup %s is not a gzip file: %w", src, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var m *Manifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("backup %s is damaged or truncated: %w", src, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("backup %s: entry %s is not a regular file", src, hdr.Name)
		}
		if hdr.Name == ManifestName {
			b, err := io.ReadAll(io.LimitReader(tr, 256<<20))
			if err != nil {
				return nil, fmt.Errorf("backup %s is damaged or truncated: %w", src, err)
			}
			mm, err := decodeManifest(b, src)
			if err != nil {
				return nil, err
			}
			m = &mm
			continue
		}
		if err := fn(hdr, ctxReader{ctx, tr}); err != nil {
			return nil, err
		}
	}
	// Read to gzip's end: a truncated stream fails here, not silently.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("backup %s is damaged or truncated: %w", src, err)
	}
	return m, nil
}
