package backup_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/labtest"
)

// remote is a second MinIO standing in for AWS S3, configured as users do.
func remote(t *testing.T) labtest.MinIOServer {
	s := labtest.StartMinIO(t)
	t.Setenv("AWS_ENDPOINT_URL", s.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", s.RootUser)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.RootPassword)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_PROFILE", "")
	return s
}

func TestS3RoundTripIsIncremental(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	r := remote(t)
	dest, err := backup.ParseTarget("s3://backups/labs/one")
	require.NoError(t, err)

	first, err := backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, first.Files, first.Uploaded, "the first backup sends everything")
	assert.Equal(t, first.Bytes, first.Sent)

	again, err := backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.NoError(t, err)
	assert.Zero(t, again.Uploaded, "nothing changed, nothing is sent")
	assert.Equal(t, first.Files, again.Files)

	changed := []byte(`{"loss": 0.25}` + "\n")
	_, err = src.Store.PutObject(ctx, src.Bucket, "tune/exp/trial_0/result.json", bytes.NewReader(changed), int64(len(changed)), minio.PutObjectOptions{})
	require.NoError(t, err)
	third, err := backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, third.Uploaded, "only the changed object is sent")
	assert.Equal(t, int64(len(changed)), third.Sent)

	// The remote holds plain files and manifest.json, readable with S3 tools.
	rc, err := minio.New(strings.TrimPrefix(r.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4(r.RootUser, r.RootPassword, "")})
	require.NoError(t, err)
	var keys []string
	for o := range rc.ListObjects(ctx, "backups", minio.ListObjectsOptions{Prefix: "labs/one/", Recursive: true}) {
		require.NoError(t, o.Err)
		keys = append(keys, o.Key)
	}
	assert.Contains(t, keys, "labs/one/manifest.json")
	assert.Contains(t, keys, "labs/one/bucket/ray/tune/exp/trial_0/result.json")

	dst := newLab(t)
	got, err := backup.Restore(ctx, dst.Lab, dest, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, 4, got.Objects)
	assertSame(t, src, dst)

	// An object changed behind the manifest's back: refused, nothing written.
	bad := []byte("tampered")
	_, err = rc.PutObject(ctx, "backups", "labs/one/workspace/train.py", bytes.NewReader(bad), int64(len(bad)), minio.PutObjectOptions{})
	require.NoError(t, err)
	fresh := newLab(t)
	_, err = backup.Restore(ctx, fresh.Lab, dest, backup.Options{})
	require.ErrorIs(t, err, backup.ErrDamaged)
	assert.Empty(t, fresh.objects(t))
	assert.Empty(t, files(t, fresh.StateDir.Path()))
}

func TestS3SettingsErrorsNameTheVariable(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	r := remote(t)
	dest := backup.Target{Bucket: "backups", Prefix: "x/"}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-"+r.RootPassword)
	_, err := backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
	assert.Contains(t, err.Error(), "refused the keys")

	t.Setenv("AWS_SECRET_ACCESS_KEY", r.RootPassword)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	_, err = backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(AWS_ENDPOINT_URL) did not answer")

	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	_, err = backup.Backup(ctx, src.Lab, dest, backup.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AWS_ACCESS_KEY_ID is not set")
}

// The AWS credentials file and AWS_PROFILE, as aws configure writes them.
func TestS3KeysFromProfile(t *testing.T) {
	ctx := context.Background()
	src := newLab(t)
	src.fill(t)
	r := remote(t)
	file := filepath.Join(t.TempDir(), "credentials")
	write(t, file, "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[lab]\naws_access_key_id = "+r.RootUser+"\naws_secret_access_key = "+r.RootPassword+"\n")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "lab")
	res, err := backup.Backup(ctx, src.Lab, backup.Target{Bucket: "made-when-missing", Prefix: ""}, backup.Options{})
	require.NoError(t, err)
	assert.Equal(t, res.Files, res.Uploaded)
}

// cancelOnProgress cancels a run at its first progress report: a backup
// cut short mid-way (Ctrl-C, a lost network).
type cancelOnProgress struct{ cancel context.CancelFunc }

func (c cancelOnProgress) Report(e progress.Event) {
	if e.Kind == progress.Update && e.Current > 0 {
		c.cancel()
	}
}

// An S3 backup cut short writes no manifest.json: nothing there looks like
// a complete backup, and restore says so.
func TestInterruptedS3BackupLeavesNoManifest(t *testing.T) {
	src := newLab(t)
	src.fill(t)
	remote(t)
	dest := backup.Target{Bucket: "backups", Prefix: "cut/"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := backup.Backup(ctx, src.Lab, dest, backup.Options{Reporter: cancelOnProgress{cancel}, Workers: 1})
	require.ErrorIs(t, err, context.Canceled)

	dst := newLab(t)
	_, err = backup.Restore(context.Background(), dst.Lab, dest, backup.Options{})
	require.ErrorIs(t, err, backup.ErrDamaged)
	assert.Contains(t, err.Error(), "has no manifest.json")
	assert.Empty(t, dst.objects(t))
}
