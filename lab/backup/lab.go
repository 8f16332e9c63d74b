package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Lab is what a backup reads and a restore writes: the lab's MinIO (as its
// root user), its bucket, its workspace and its state directory. Secrets
// are the lab's credentials, which never go into a backup.
type Lab struct {
	Project   string
	Store     *minio.Client
	Bucket    string
	Workspace string
	StateDir  state.Dir
	Secrets   []string
}

// Open is the lab kept in d, from its state.json and credentials.json.
func Open(d state.Dir) (Lab, error) {
	st, err := d.State()
	if err != nil {
		return Lab{}, err
	}
	creds, err := d.Credentials()
	if err != nil {
		return Lab{}, err
	}
	mc, err := labClient(st.Probes.MinIO, creds.MinIOAccessKey, creds.MinIOSecretKey)
	if err != nil {
		return Lab{}, err
	}
	ws := st.Plan.Workspace
	if ws == "" {
		ws = plan.DefaultWorkspace
	}
	if !filepath.IsAbs(ws) { // as render.WorkspaceDir places it
		ws = d.File(ws)
	}
	return Lab{Project: st.Project, Store: mc, Bucket: store.DefaultBucket, Workspace: ws, StateDir: d, Secrets: creds.Secrets()}, nil
}

// NewLab is a lab of a MinIO at endpoint (a URL) with root keys: for tests
// and benchmarks that have no state dir's lab.
func NewLab(endpoint, access, secret, workspace string, d state.Dir) (Lab, error) {
	mc, err := labClient(endpoint, access, secret)
	if err != nil {
		return Lab{}, err
	}
	return Lab{Project: "mltrain", Store: mc, Bucket: store.DefaultBucket, Workspace: workspace, StateDir: d, Secrets: []string{access, secret}}, nil
}

func labClient(endpoint, access, secret string) (*minio.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the lab's MinIO endpoint %q is not a URL", endpoint)
	}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Secure: u.Scheme == "https",
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("the lab's MinIO %s: %w", endpoint, err)
	}
	return mc, nil
}

// storeErr names the lab's MinIO in err; one that did not answer is
// store.ErrUnreachable, for the command's next step (is the lab up?).
func (l Lab) storeErr(what string, err error) error {
	err = fmt.Errorf("%s of the lab's MinIO %s: %w", what, l.Store.EndpointURL().Host, err)
	var er minio.ErrorResponse
	if !errors.As(err, &er) && !errors.Is(err, context.Canceled) {
		return clierr.Mark(err, store.ErrUnreachable)
	}
	return err
}

// item is one file to back up: where it goes, where it comes from, and how
// to read it (data when already in memory).
type item struct {
	Entry
	data []byte
	open func(ctx context.Context) (io.ReadCloser, error)
}

func (it item) reader(ctx context.Context) (io.ReadCloser, error) {
	if it.data != nil || it.open == nil {
		return io.NopCloser(bytes.NewReader(it.data)), nil
	}
	return it.open(ctx)
}

// items lists what a backup of the lab holds, bucket objects first, each
// group in path order. Workspace and state files holding a lab secret are
// left out (skipped names them); state.json has its secrets redacted.
func (l Lab) items(ctx context.Context) (out []item, skipped []string, err error) {
	for obj := range l.Store.ListObjects(ctx, l.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			return nil, nil, l.storeErr("listing bucket "+l.Bucket, obj.Err)
		}
		if strings.HasSuffix(obj.Key, "/") {
			continue // a folder marker
		}
		key := obj.Key
		out = append(out, item{Entry: Entry{Path: path.Join(BucketDir, l.Bucket, key), Size: obj.Size, From: "s3://" + l.Bucket + "/" + key, ModTime: obj.LastModified},
			open: func(ctx context.Context) (io.ReadCloser, error) {
				return l.Store.GetObject(ctx, l.Bucket, key, minio.GetObjectOptions{})
			}})
	}
	ws, sk, err := l.dirItems(l.Workspace, WorkspaceDir, "workspace ")
	if err != nil {
		return nil, nil, err
	}
	out, skipped = append(out, ws...), append(skipped, sk...)
	recs, sk, err := l.dirItems(l.StateDir.File(state.RecordsDir), RecordsDir, "state dir ")
	if err != nil {
		return nil, nil, err
	}
	out, skipped = append(out, recs...), append(skipped, sk...)
	reps, sk, err := l.dirItems(l.StateDir.File(state.ReportsDir), ReportsDir, "state dir ")
	if err != nil {
		return nil, nil, err
	}
	out, skipped = append(out, reps...), append(skipped, sk...)
	if b, err := os.ReadFile(l.StateDir.File(state.StateFile)); err == nil {
		b = l.redact(b)
		out = append(out, item{Entry: Entry{Path: path.Join(PlanDir, state.StateFile), Size: int64(len(b)), From: l.StateDir.File(state.StateFile), ModTime: time.Now().UTC(), Mode: 0o600}, data: b})
	}
	return out, skipped, nil
}

// dirItems lists the regular files under dir (none when it is missing).
// Files are small (notebooks, records): each is read once here, so one that
// holds a secret is known before anything is written.
func (l Lab) dirItems(dir, under, what string) (out []item, skipped []string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if l.holdsSecret(b) {
			skipped = append(skipped, p)
			return nil
		}
		out = append(out, item{Entry: Entry{Path: path.Join(under, filepath.ToSlash(rel)), Size: int64(len(b)), From: what + p,
			ModTime: info.ModTime().UTC(), Mode: uint32(info.Mode().Perm())}, data: b})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s%s: %w", what, dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, skipped, nil
}

func (l Lab) holdsSecret(b []byte) bool {
	for _, s := range l.Secrets {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func (l Lab) redact(b []byte) []byte {
	for _, s := range l.Secrets {
		b = bytes.ReplaceAll(b, []byte(s), []byte("REDACTED"))
	}
	return b
}
