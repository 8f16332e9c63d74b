package backup

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/state"
)

// ErrDamaged matches (errors.Is) a backup whose files do not match its
// manifest, or that has none: nothing of it is restored.
var ErrDamaged = errors.New("backup damaged")

// Restored says what a restore wrote, and the local files it kept because
// they are newer than the backup's (Conflicts; --force overwrites them).
type Restored struct {
	Source    string   `json:"source"`
	Objects   int      `json:"objects"`
	Files     int      `json:"files"`
	Bytes     int64    `json:"bytes"`
	Unchanged int      `json:"unchanged"`
	Conflicts []string `json:"conflicts,omitempty"`
}

// Restore proves every file of src against its manifest (one full read)
// before it writes anything, then writes the bucket's objects, the
// workspace and the records into the lab. A local file newer than the
// backup's and different is kept unless o.Force, and named in Conflicts.
func Restore(ctx context.Context, l Lab, src Target, o Options) (Restored, error) {
	var r *remote
	var m Manifest
	var err error
	if src.File != "" {
		m, err = verifyArchive(ctx, src.File, o)
	} else {
		if r, err = openRemote(o.S3); err == nil {
			m, err = verifyS3(ctx, r, src, o)
		}
	}
	if err != nil {
		return Restored{}, err
	}
	plan, res, err := l.planRestore(m, o.Force)
	if err != nil {
		return Restored{}, err
	}
	res.Source = src.String()
	if err := l.ensureBuckets(ctx, m); err != nil {
		return Restored{}, err
	}
	step := "restore"
	progress.Begin(o.Reporter, step, "restoring "+humanize.IBytes(uint64(m.Bytes())))
	var done int64
	write := func(path string, rd io.Reader) error {
		e, ok := plan[path]
		if !ok {
			return nil // unchanged, a conflict kept, or the plan (reference only)
		}
		h := sha256.New()
		rd = io.TeeReader(io.LimitReader(rd, e.Size), h)
		if err := l.put(ctx, e, rd); err != nil {
			return err
		}
		if hex.EncodeToString(h.Sum(nil)) != e.SHA256 {
			return fmt.Errorf("%s: %s changed since it was verified; run the restore again", src, e.Path)
		}
		done += e.Size
		progress.Advance(o.Reporter, step, done, res.Bytes, "bytes")
		return nil
	}
	if src.File != "" {
		_, err = archiveEntries(ctx, src.File, func(hdr *tar.Header, rd io.Reader) error { return write(hdr.Name, rd) })
	} else {
		for _, e := range m.Entries {
			if _, ok := plan[e.Path]; !ok {
				continue
			}
			if err = r.get(ctx, src, e.Path, func(rd io.Reader) error { return write(e.Path, rd) }); err != nil {
				break
			}
		}
	}
	if err != nil {
		progress.Failed(o.Reporter, step, err)
		return Restored{}, err
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%d objects, %d files", res.Objects, res.Files))
	return res, nil
}

// planRestore picks what to write: every object, and each workspace file
// or record that differs from the local one, unless the local one is newer
// (a conflict, kept without force).
func (l Lab) planRestore(m Manifest, force bool) (map[string]Entry, Restored, error) {
	plan := map[string]Entry{}
	var res Restored
	for _, e := range m.Entries {
		dst, kind := l.destination(e.Path)
		switch kind {
		case "":
			continue
		case "object":
			plan[e.Path] = e
			res.Objects++
			res.Bytes += e.Size
			continue
		}
		if info, err := os.Stat(dst); err == nil {
			sum, err := fileSHA256(dst)
			if err != nil {
				return nil, Restored{}, err
			}
			if sum == e.SHA256 {
				res.Unchanged++
				continue
			}
			if info.ModTime().After(e.ModTime) && !force {
				res.Conflicts = append(res.Conflicts, dst)
				continue
			}
		}
		plan[e.Path] = e
		res.Files++
		res.Bytes += e.Size
	}
	sort.Strings(res.Conflicts)
	return plan, res, nil
}

// destination is where a backup's path is restored: a local file, or
// ("object") the lab's bucket; "" for what is never restored.
func (l Lab) destination(p string) (string, string) {
	top, rest, _ := strings.Cut(p, "/")
	switch top {
	case BucketDir:
		return rest, "object"
	case WorkspaceDir:
		return filepath.Join(l.Workspace, filepath.FromSlash(rest)), "file"
	case RecordsDir:
		return filepath.Join(l.StateDir.File(state.RecordsDir), filepath.FromSlash(rest)), "file"
	case ReportsDir:
		return filepath.Join(l.StateDir.File(state.ReportsDir), filepath.FromSlash(rest)), "file"
	}
	return "", ""
}

// put writes one verified entry into the lab.
func (l Lab) put(ctx context.Context, e Entry, rd io.Reader) error {
	dst, kind := l.destination(e.Path)
	if kind == "object" {
		bucket, key, _ := strings.Cut(dst, "/")
		if _, err := l.Store.PutObject(ctx, bucket, key, rd, e.Size, minio.PutObjectOptions{}); err != nil {
			return l.storeErr("restoring s3://"+bucket+"/"+key, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("restoring %s: %w", dst, err)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".restore-*")
	if err != nil {
		return fmt.Errorf("restoring %s: %w", dst, err)
	}
	_, err = io.Copy(f, ctxReader{ctx, rd})
	for _, c := range []func() error{func() error { return f.Chmod(os.FileMode(e.mode())) }, f.Close} {
		if cerr := c(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Chtimes(f.Name(), e.ModTime, e.ModTime)
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("restoring %s: %w", dst, err)
	}
	return nil
}

// ensureBuckets makes the lab's buckets the manifest's objects go to.
func (l Lab) ensureBuckets(ctx context.Context, m Manifest) error {
	seen := map[string]bool{}
	for _, e := range m.Entries {
		dst, kind := l.destination(e.Path)
		bucket, _, _ := strings.Cut(dst, "/")
		if kind != "object" || seen[bucket] {
			continue
		}
		seen[bucket] = true
		ok, err := l.Store.BucketExists(ctx, bucket)
		if err == nil && !ok {
			err = l.Store.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})
		}
		if err != nil {
			return l.storeErr("bucket "+bucket, err)
		}
	}
	return nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyArchive reads the whole archive once: every entry must be listed in
// its manifest with that size and sha256, and every listed file present.
func verifyArchive(ctx context.Context, src string, o Options) (Manifest, error) {
	seen := map[string]string{}
	step := "verify"
	progress.Begin(o.Reporter, step, "verifying "+src)
	var n int64
	m, err := archiveEntries(ctx, src, func(hdr *tar.Header, rd io.Reader) error {
		if err := checkPath(hdr.Name); err != nil {
			return err
		}
		h := sha256.New()
		c, err := io.Copy(h, rd)
		if err != nil {
			return fmt.Errorf("backup %s is damaged or truncated: %w", src, err)
		}
		n += c
		progress.Advance(o.Reporter, step, n, 0, "bytes")
		seen[hdr.Name] = fmt.Sprintf("%d:%x", c, h.Sum(nil))
		return nil
	})
	if err == nil && m == nil {
		err = fmt.Errorf("backup %s has no manifest.json: it is not a complete backup", src)
	}
	if err == nil {
		err = compare(*m, seen, src)
	}
	if err != nil {
		progress.Failed(o.Reporter, step, err)
		if errors.Is(err, context.Canceled) {
			return Manifest{}, err
		}
		return Manifest{}, clierr.WithHint(fmt.Errorf("%w: %w", ErrDamaged, err), "nothing was restored; restore from another copy of the backup")
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%d files match manifest.json", len(m.Entries)))
	return *m, nil
}

// compare checks what was read (path -> "size:sha256") against m.
func compare(m Manifest, seen map[string]string, src string) error {
	for _, e := range m.Entries {
		got, ok := seen[e.Path]
		if !ok {
			return fmt.Errorf("backup %s lacks %s, which its manifest lists", src, e.Path)
		}
		if want := fmt.Sprintf("%d:%s", e.Size, e.SHA256); got != want {
			return fmt.Errorf("backup %s: %s does not match its manifest (size:sha256 %s, manifest says %s)", src, e.Path, got, want)
		}
		delete(seen, e.Path)
	}
	for p := range seen {
		return fmt.Errorf("backup %s holds %s, which its manifest does not list", src, p)
	}
	return nil
}

// get streams one file of the backup at src's prefix into fn.
func (r *remote) get(ctx context.Context, src Target, p string, fn func(io.Reader) error) error {
	obj, err := r.mc.GetObject(ctx, src.Bucket, src.Prefix+p, minio.GetObjectOptions{})
	if err != nil {
		return r.wrap("reading "+src.String()+p, err)
	}
	defer obj.Close()
	if err := fn(obj); err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) {
			return r.wrap("reading "+src.String()+p, err)
		}
		return err
	}
	return nil
}

// verifyS3 reads the manifest at src and every file it lists, in parallel.
func verifyS3(ctx context.Context, r *remote, src Target, o Options) (Manifest, error) {
	m, err := readS3Manifest(ctx, r, src)
	if isNoSuchKey(err) {
		return Manifest{}, clierr.WithHint(fmt.Errorf("%w: %s has no manifest.json: no complete backup there", ErrDamaged, src), "pass the s3://bucket/prefix a finished backup wrote to")
	}
	if err != nil {
		return Manifest{}, err
	}
	step := "verify"
	progress.Begin(o.Reporter, step, "verifying "+src.String())
	seen := make([]string, len(m.Entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.workers())
	for i, e := range m.Entries {
		g.Go(func() error {
			return r.get(gctx, src, e.Path, func(rd io.Reader) error {
				h := sha256.New()
				n, err := io.Copy(h, rd)
				if err != nil {
					return err
				}
				seen[i] = fmt.Sprintf("%d:%x", n, h.Sum(nil))
				return nil
			})
		})
	}
	err = g.Wait()
	if err == nil {
		got := map[string]string{}
		for i, e := range m.Entries {
			got[e.Path] = seen[i]
		}
		err = compare(m, got, src.String())
		if err != nil {
			err = clierr.WithHint(fmt.Errorf("%w: %w", ErrDamaged, err), "nothing was restored; run the backup again, or restore from another copy")
		}
	}
	if isNoSuchKey(err) {
		err = clierr.WithHint(fmt.Errorf("%w: %s lacks a file its manifest lists: %w", ErrDamaged, src, err), "nothing was restored; run the backup again, or restore from another copy")
	}
	if err != nil {
		progress.Failed(o.Reporter, step, err)
		return Manifest{}, err
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%d files match manifest.json", len(m.Entries)))
	return m, nil
}
