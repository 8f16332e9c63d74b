package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/klauspost/pgzip"
	"github.com/minio/minio-go/v7"

	"github.com/mltrain/mltrain/internal/progress"
)

// Options tune a backup or a restore.
type Options struct {
	Reporter progress.Reporter
	// Workers read objects (and compress) in parallel; runtime.NumCPU()
	// (at least 4) when 0.
	Workers int
	// Level is the gzip level; 0 means pgzip's default.
	Level int
	// Force lets a restore overwrite workspace files and records newer
	// than the backup's.
	Force bool
	// S3 are the S3 settings; nil: ResolveS3's, from the environment.
	S3 *S3Settings
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return max(4, runtime.NumCPU())
}

func (o Options) level() int {
	if o.Level == 0 {
		return pgzip.DefaultCompression
	}
	return o.Level
}

// Result says what a backup wrote.
type Result struct {
	Target   string   `json:"target"`
	Files    int      `json:"files"`
	Bytes    int64    `json:"bytes"`
	Uploaded int      `json:"uploaded"`       // to S3: files sent this time
	Sent     int64    `json:"uploaded_bytes"` // to S3: their bytes
	Skipped  []string `json:"skipped,omitempty"`
}

// Backup writes the lab's bucket, workspace, exercise records and plan to
// dest: a .tar.gz, or an S3 prefix where only what changed since the
// manifest already there is sent.
func Backup(ctx context.Context, l Lab, dest Target, o Options) (Result, error) {
	items, skipped, err := l.items(ctx)
	if err != nil {
		return Result{}, err
	}
	for _, s := range skipped {
		progress.Warning(o.Reporter, fmt.Sprintf("%s holds one of the lab's secrets: left out of the backup", s))
	}
	m := Manifest{Version: 1, Created: time.Now().UTC(), Project: l.Project, Bucket: l.Bucket}
	r := Result{Target: dest.String(), Skipped: skipped}
	if dest.File != "" {
		m, err = writeArchive(ctx, dest.File, items, m, o)
	} else {
		m, r.Uploaded, r.Sent, err = writeS3(ctx, dest, items, m, o)
	}
	if err != nil {
		return Result{}, err
	}
	r.Files, r.Bytes = len(m.Entries), m.Bytes()
	return r, nil
}

// writeS3 uploads each item under dest's prefix unless the manifest there
// already lists it with the same size and sha256, then writes the new
// manifest last: a backup cut short leaves the old manifest (or none).
func writeS3(ctx context.Context, dest Target, items []item, m Manifest, o Options) (Manifest, int, int64, error) {
	r, err := openRemote(o.S3)
	if err != nil {
		return Manifest{}, 0, 0, err
	}
	if err := r.ensureBucket(ctx, dest.Bucket); err != nil {
		return Manifest{}, 0, 0, err
	}
	prev := map[string]Entry{}
	if old, err := readS3Manifest(ctx, r, dest); err == nil {
		prev = old.byPath()
	} else if !isNoSuchKey(err) {
		return Manifest{}, 0, 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := prefetch(ctx, items, o.workers())
	defer func() {
		cancel()
		for f := range ch {
			if f.r != nil {
				f.r.Close()
			}
		}
	}()
	var total, done, sent int64
	uploaded := 0
	for _, it := range items {
		total += it.Size
	}
	step := "backup"
	progress.Begin(o.Reporter, step, "backing up "+humanize.IBytes(uint64(total))+" to "+dest.String())
	for f := range ch {
		if f.err != nil {
			progress.Failed(o.Reporter, step, f.err)
			return Manifest{}, 0, 0, f.err
		}
		e, up, err := putIfChanged(ctx, r, dest, f, prev[f.Path])
		if err != nil {
			progress.Failed(o.Reporter, step, err)
			return Manifest{}, 0, 0, err
		}
		if up {
			uploaded++
			sent += e.Size
		}
		m.Entries = append(m.Entries, e)
		done += e.Size
		progress.Advance(o.Reporter, step, done, total, "bytes")
	}
	if err := ctx.Err(); err != nil {
		return Manifest{}, 0, 0, err
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if _, err := r.mc.PutObject(ctx, dest.Bucket, dest.Prefix+ManifestName, bytes.NewReader(append(b, '\n')), int64(len(b)+1),
		minio.PutObjectOptions{ContentType: "application/json"}); err != nil {
		return Manifest{}, 0, 0, r.wrap("writing "+dest.String()+ManifestName, err)
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%d files, %s; sent %d changed (%s)", len(m.Entries), humanize.IBytes(uint64(done)), uploaded, humanize.IBytes(uint64(sent))))
	return m, uploaded, sent, nil
}

// putIfChanged hashes f and uploads it unless prev (the last manifest's
// entry) has its size and sha256. A file whose size changed is streamed up
// as it is hashed; one of the same size is hashed first, and read again
// only when it did change.
func putIfChanged(ctx context.Context, r *remote, dest Target, f fetched, prev Entry) (Entry, bool, error) {
	e := f.Entry
	key := dest.Prefix + f.Path
	h := sha256.New()
	if prev.Path == "" || prev.Size != f.Size {
		_, err := r.mc.PutObject(ctx, dest.Bucket, key, io.TeeReader(io.LimitReader(ctxReader{ctx, f.r}, f.Size), h), f.Size, minio.PutObjectOptions{})
		f.r.Close()
		if err != nil {
			return Entry{}, false, r.wrap("uploading "+f.From+" to s3://"+dest.Bucket+"/"+key, err)
		}
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
		return e, true, nil
	}
	n, err := io.Copy(h, io.LimitReader(ctxReader{ctx, f.r}, f.Size))
	f.r.Close()
	if err == nil && n != f.Size {
		err = fmt.Errorf("%s changed while it was read", f.From)
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("reading %s: %w", f.From, err)
	}
	e.SHA256 = hex.EncodeToString(h.Sum(nil))
	if e.SHA256 == prev.SHA256 {
		return e, false, nil
	}
	rc, err := f.reader(ctx)
	if err != nil {
		return Entry{}, false, fmt.Errorf("reading %s: %w", f.From, err)
	}
	defer rc.Close()
	h2 := sha256.New()
	if _, err := r.mc.PutObject(ctx, dest.Bucket, key, io.TeeReader(rc, h2), f.Size, minio.PutObjectOptions{}); err != nil {
		return Entry{}, false, r.wrap("uploading "+f.From+" to s3://"+dest.Bucket+"/"+key, err)
	}
	if hex.EncodeToString(h2.Sum(nil)) != e.SHA256 {
		return Entry{}, false, fmt.Errorf("%s changed while it was backed up: run the backup again", f.From)
	}
	return e, true, nil
}

// readS3Manifest reads the manifest at dest's prefix.
func readS3Manifest(ctx context.Context, r *remote, dest Target) (Manifest, error) {
	obj, err := r.mc.GetObject(ctx, dest.Bucket, dest.Prefix+ManifestName, minio.GetObjectOptions{})
	if err != nil {
		return Manifest{}, r.wrap("reading "+dest.String()+ManifestName, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, 256<<20))
	if err != nil {
		if isNoSuchKey(err) {
			return Manifest{}, err
		}
		return Manifest{}, r.wrap("reading "+dest.String()+ManifestName, err)
	}
	return decodeManifest(b, dest.String())
}

func isNoSuchKey(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == "NoSuchKey"
}
