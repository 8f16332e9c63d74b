package backup_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/state"
)

// testLab is a lab's MinIO (a real MinIO process), workspace and state dir.
type testLab struct {
	backup.Lab
	minio labtest.MinIOServer
}

func newLab(t *testing.T) testLab {
	t.Helper()
	s := labtest.StartMinIO(t)
	dir := t.TempDir()
	l, err := backup.NewLab(s.URL, s.RootUser, s.RootPassword, filepath.Join(dir, "workspace"), state.Dir(dir))
	require.NoError(t, err)
	require.NoError(t, l.Store.MakeBucket(context.Background(), l.Bucket, minio.MakeBucketOptions{}))
	return testLab{Lab: l, minio: s}
}

// secret is a credential of the lab, written where a careless backup would take it.
const secret = "SECRETs3cr3tLABTOKEN0123456789"

// verifyReport is what 'mltrain verify' keeps in the state dir.
const verifyReport = `{"project": "mltrain", "ok": true, "checks": [{"id": "host.gpus", "status": "pass"}]}` + "\n"

// fill gives the lab checkpoints, a workspace, records, a verify report
// and a plan.
func (l *testLab) fill(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	l.Secrets = append(l.Secrets, secret)
	big := make([]byte, 3<<20+17)
	_, _ = rand.Read(big)
	objs := map[string][]byte{
		"train-run/checkpoint_2026-11-29_05-00-00.000001/checkpoint.pt": big,
		"train-run/checkpoint_2026-11-29_05-00-00.000001/meta.json":     []byte(`{"epoch": 1}`),
		"train-run/.validate_storage_marker":                            {},
		"tune/exp/trial_0/result.json":                                  []byte(`{"loss": 0.5}` + "\n"),
	}
	for k, v := range objs {
		_, err := l.Store.PutObject(ctx, l.Bucket, k, bytes.NewReader(v), int64(len(v)), minio.PutObjectOptions{})
		require.NoError(t, err)
	}
	write(t, filepath.Join(l.Workspace, "train.py"), "print('train')\n")
	write(t, filepath.Join(l.Workspace, "notes", "a.ipynb"), `{"cells": []}`)
	write(t, filepath.Join(l.Workspace, "leak.env"), "AWS_SECRET_ACCESS_KEY="+secret+"\n")
	write(t, l.StateDir.File(state.RecordFile("fault")), `{"exercise": "fault"}`)
	write(t, l.StateDir.File(state.VerifyReportFile), verifyReport)
	write(t, l.StateDir.File(state.StateFile), `{"project": "mltrain", "note": "`+secret+`"}`)
	write(t, l.StateDir.File(state.CredentialsFile), `{"ray_auth_token": "`+secret+`"}`)
}

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

// objects is every object of the lab's bucket, key -> content.
func (l testLab) objects(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for o := range l.Store.ListObjects(ctx, l.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		require.NoError(t, o.Err)
		obj, err := l.Store.GetObject(ctx, l.Bucket, o.Key, minio.GetObjectOptions{})
		require.NoError(t, err)
		b, err := io.ReadAll(obj)
		require.NoError(t, err)
		out[o.Key] = string(b)
	}
	return out
}

// files is every file under dir, relative path -> content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// assertSame checks that to holds from's objects, workspace (but the file
// with a secret) and records byte for byte.
func assertSame(t *testing.T, from, to testLab) {
	t.Helper()
	want := from.objects(t)
	require.Len(t, want, 4)
	assert.Equal(t, want, to.objects(t))
	ws := files(t, from.Workspace)
	delete(ws, "leak.env")
	assert.Equal(t, ws, files(t, to.Workspace))
	assert.Equal(t, files(t, from.StateDir.File(state.RecordsDir)), files(t, to.StateDir.File(state.RecordsDir)))
	assert.Equal(t, files(t, from.StateDir.File(state.ReportsDir)), files(t, to.StateDir.File(state.ReportsDir)))
	_, err := os.Stat(to.StateDir.File(state.CredentialsFile))
	assert.True(t, os.IsNotExist(err), "restore must not write credentials")
}

func TestFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	dest := filepath.Join(t.TempDir(), "lab.tar.gz")
	res, err := backup.Backup(ctx, src.Lab, backup.Target{File: dest}, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, 4+2+1+1+1, res.Files, "4 objects, 2 workspace files, 1 record, the verify report, the plan")
	assert.Equal(t, []string{filepath.Join(src.Workspace, "leak.env")}, res.Skipped)

	// Standard tools read it: tar lists every file and the manifest.
	out, err := exec.Command("tar", "-tzf", dest).CombinedOutput()
	require.NoError(t, err, string(out))
	names := strings.Fields(string(out))
	assert.Contains(t, names, "manifest.json")
	assert.Contains(t, names, "bucket/ray/train-run/checkpoint_2026-11-29_05-00-00.000001/checkpoint.pt")
	assert.Contains(t, names, "workspace/train.py")
	assert.Contains(t, names, "records/fault.json")
	assert.Contains(t, names, "reports/verify.json", "the last verify report")
	assert.Equal(t, "manifest.json", names[len(names)-1], "the manifest is written last")
	assertNoSecret(t, dest, src.Secrets)

	dst := newLab(t)
	got, err := backup.Restore(ctx, dst.Lab, backup.Target{File: dest}, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, 4, got.Objects)
	assert.Equal(t, 4, got.Files)
	assertSame(t, src, dst)
	b, err := os.ReadFile(dst.StateDir.File(state.VerifyReportFile))
	require.NoError(t, err)
	assert.Equal(t, verifyReport, string(b), "restore puts the verify report back in the state dir")
}

// assertNoSecret reads the whole archive, decompressed, for each secret.
func assertNoSecret(t *testing.T, archive string, secrets []string) {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NotEmpty(t, secrets)
	for _, s := range secrets {
		assert.False(t, bytes.Contains(b, []byte(s)), "secret %q is in the backup", s)
	}
}

func TestTamperedOrTruncatedArchiveIsRefused(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	dir := t.TempDir()
	dest := filepath.Join(dir, "lab.tar.gz")
	_, err := backup.Backup(ctx, src.Lab, backup.Target{File: dest}, backup.Options{})
	require.NoError(t, err)
	tar := gunzip(t, dest)

	// One byte of train.py changed, the archive re-compressed: gzip and tar are
	// fine, only the sha256 tells.
	i := bytes.Index(tar, []byte("print('train')"))
	require.Positive(t, i)
	tampered := bytes.Clone(tar)
	tampered[i] = 'P'
	truncated := tar[:len(tar)*2/3]
	for name, b := range map[string][]byte{"tampered": tampered, "truncated": truncated} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".tar.gz")
			gz(t, p, b)
			dst := newLab(t)
			_, err := backup.Restore(ctx, dst.Lab, backup.Target{File: p}, backup.Options{})
			require.ErrorIs(t, err, backup.ErrDamaged)
			assert.Empty(t, dst.objects(t), "nothing restored into the bucket")
			assert.Empty(t, files(t, dst.StateDir.Path()), "nothing restored into the workspace or records")
		})
	}
}

func gunzip(t *testing.T, p string) []byte {
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	return b
}

func gz(t *testing.T, p string, b []byte) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
}

func TestRestoreKeepsNewerLocalFileUnlessForced(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	dest := filepath.Join(t.TempDir(), "lab.tar.gz")
	_, err := backup.Backup(ctx, src.Lab, backup.Target{File: dest}, backup.Options{})
	require.NoError(t, err)

	dst := newLab(t)
	mine := filepath.Join(dst.Workspace, "train.py")
	write(t, mine, "print('my newer work')\n")
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(mine, future, future))

	got, err := backup.Restore(ctx, dst.Lab, backup.Target{File: dest}, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{mine}, got.Conflicts)
	b, _ := os.ReadFile(mine)
	assert.Equal(t, "print('my newer work')\n", string(b), "the newer local file is kept")
	assert.FileExists(t, filepath.Join(dst.Workspace, "notes", "a.ipynb"), "the rest is restored")

	got, err = backup.Restore(ctx, dst.Lab, backup.Target{File: dest}, backup.Options{Force: true})
	require.NoError(t, err)
	assert.Empty(t, got.Conflicts)
	assertSame(t, src, dst)
}

// A disk that fills during a file backup leaves no file with the
// destination's name, and no temp file either.
func TestFullDiskLeavesNoBackupFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount a 1 MiB tmpfs: %s", out)
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })

	dest := filepath.Join(dir, "lab.tar.gz")
	_, err = backup.Backup(ctx, src.Lab, backup.Target{File: dest}, backup.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "nothing is left on the full disk")
}
