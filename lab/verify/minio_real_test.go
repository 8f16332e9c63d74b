package verify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/labtest"
)

// The MinIO checks against a real MinIO server, made as up makes it: the
// bucket private and the lab user limited pass; a bucket policy opening
// the bucket to anyone fails minio.private until it is removed (what up
// does), and the lab user's policy of labs before issue 31 (s3:*) fails
// minio.lab-user.
func TestMinIOChecksOnRealMinIO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := labtest.StartMinIO(t)
	f := newFixture(t)
	c := &f.deps.Creds
	c.MinIOAccessKey, c.MinIOSecretKey = srv.RootUser, srv.RootPassword
	f.deps.State.Probes.MinIO = srv.URL
	f.deps.MinIO = func(a, s string) (Store, error) {
		return store.New(store.Config{Endpoint: srv.URL, AccessKey: a, SecretKey: s})
	}
	root, err := store.New(store.Config{Endpoint: srv.URL, AccessKey: srv.RootUser, SecretKey: srv.RootPassword})
	require.NoError(t, err)
	_, err = root.EnsureBucket(ctx, store.DefaultBucket)
	require.NoError(t, err)
	adm, err := store.NewAdmin(store.Config{Endpoint: srv.URL, AccessKey: srv.RootUser, SecretKey: srv.RootPassword})
	require.NoError(t, err)
	_, err = adm.EnsureBucketUser(ctx, store.DefaultBucket, c.MinIOLabAccessKey, c.MinIOLabSecretKey)
	require.NoError(t, err)

	checks := func() map[string]Check {
		r := f.run(Options{Only: []string{GroupMinIO}, Timeout: 30 * time.Second})
		out := map[string]Check{}
		for _, c := range r.Checks {
			out[c.ID] = c
		}
		return out
	}
	got := checks()
	assert.Equal(t, Pass, got["minio.private"].Status, got["minio.private"].Evidence)
	assert.Contains(t, got["minio.private"].Evidence, "anonymous list and read refused (AccessDenied)")
	assert.Equal(t, Pass, got["minio.lab-user"].Status, got["minio.lab-user"].Evidence)
	assert.Contains(t, got["minio.lab-user"].Evidence, "is refused outside it and its policy (AccessDenied)")

	mc, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4(srv.RootUser, srv.RootPassword, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	require.NoError(t, mc.SetBucketPolicy(ctx, store.DefaultBucket, storetest.AnonymousReadPolicy(store.DefaultBucket)))
	got = checks()
	assert.Equal(t, Fail, got["minio.private"].Status)
	assert.Contains(t, got["minio.private"].Evidence, `bucket "ray" has its own policy granting anyone s3:GetBucketLocation, s3:GetObject, s3:ListBucket`)
	assert.Contains(t, got["minio.private"].Fix, `mltrain up (it removes bucket "ray"'s policy`)

	removed, err := root.RemoveBucketPolicy(ctx, store.DefaultBucket) // up's bucket step
	require.NoError(t, err)
	require.True(t, removed)
	got = checks()
	assert.Equal(t, Pass, got["minio.private"].Status, got["minio.private"].Evidence)

	ma, err := madmin.NewWithOptions(strings.TrimPrefix(srv.URL, "http://"), &madmin.Options{Creds: credentials.NewStaticV4(srv.RootUser, srv.RootPassword, "")})
	require.NoError(t, err)
	require.NoError(t, ma.AddCannedPolicy(ctx, store.BucketPolicyName(store.DefaultBucket), []byte(oldLabUserPolicy)))
	got = checks()
	assert.Equal(t, Fail, got["minio.lab-user"].Status)
	assert.Contains(t, got["minio.lab-user"].Evidence, `may read bucket "ray"'s policy`)
	assert.Contains(t, got["minio.lab-user"].Fix, "mltrain up")
}
