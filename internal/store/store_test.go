package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
)

func TestEnsureBucketIsIdempotent(t *testing.T) {
	d := storetest.New(t)
	c := d.Client(t, storetest.AccessKey)
	ctx := context.Background()
	created, err := c.EnsureBucket(ctx, "ray")
	require.NoError(t, err)
	assert.True(t, created)
	created, err = c.EnsureBucket(ctx, "ray")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, []string{"HEAD /ray/", "PUT /ray/", "HEAD /ray/"}, d.Calls())
}

func TestWrongCredentialsSayWhatToFix(t *testing.T) {
	d := storetest.New(t)
	c := d.Client(t, "WRONG")
	_, err := c.ListCheckpoints(context.Background(), "ray", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "credentials refused")
	assert.ErrorIs(t, err, store.ErrCredentialsRefused)
}

func TestNewRejectsMissingConfig(t *testing.T) {
	_, err := store.New(store.Config{AccessKey: "a", SecretKey: "b"})
	assert.ErrorIs(t, err, store.ErrNoEndpoint)
	_, err = store.New(store.Config{Endpoint: "localhost:9000"})
	assert.ErrorIs(t, err, store.ErrNoCredentials)
	assert.ErrorContains(t, err, "no MinIO credentials for localhost:9000")
}

func TestListCheckpointsBothLayouts(t *testing.T) {
	d := storetest.New(t)
	t0 := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	for key, o := range map[string]struct {
		size int64
		mod  time.Time
	}{
		// Train V2 layout
		"fault-1/.validate_storage_marker":                                 {0, t0},
		"fault-1/checkpoint_manager_snapshot.json":                         {10, t0.Add(30 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-10.000001/checkpoint.ckpt":    {100, t0.Add(10 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-20.000001/checkpoint.ckpt":    {100, t0.Add(20 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-20.000001/extra/metrics.json": {5, t0.Add(21 * time.Second)},
		// Train V1 / Tune layout
		"TorchTrainer_x/TorchTrainer_a_00000_0_x/checkpoint_000000/checkpoint.ckpt": {7, t0.Add(time.Second)},
		"TorchTrainer_x/TorchTrainer_a_00000_0_x/result.json":                       {7, t0.Add(time.Second)},
	} {
		d.Put("ray", key, o.size, o.mod)
	}
	c := d.Client(t, storetest.AccessKey)
	ctx := context.Background()

	cps, err := c.ListCheckpoints(ctx, "ray", "fault-1/")
	require.NoError(t, err)
	require.Len(t, cps, 2)
	assert.Equal(t, "checkpoint_2026-11-21_20-00-10.000001", cps[0].Name)
	assert.Equal(t, "fault-1", cps[1].Run)
	assert.Equal(t, 2, cps[1].Files)
	assert.Equal(t, int64(105), cps[1].Bytes)
	assert.Equal(t, "s3://ray/fault-1/checkpoint_2026-11-21_20-00-20.000001", cps[1].URI())

	latest, ok, err := c.Latest(ctx, "ray", "")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "fault-1/checkpoint_2026-11-21_20-00-20.000001", latest.Path)

	all, err := c.ListCheckpoints(ctx, "ray", "TorchTrainer_x/")
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "checkpoint_000000", all[0].Name)
	assert.Equal(t, "TorchTrainer_x/TorchTrainer_a_00000_0_x", all[0].Run)

	_, ok, err = c.Latest(ctx, "ray", "nothing-here/")
	require.NoError(t, err)
	assert.False(t, ok)

	_, err = c.ListCheckpoints(ctx, "missing", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing")
}

func TestEnsureBucketUserIsIdempotentAndLimitsTheUser(t *testing.T) {
	d := storetest.New(t)
	ctx := context.Background()
	root := d.Client(t, storetest.AccessKey)
	_, err := root.EnsureBucket(ctx, "ray")
	require.NoError(t, err)
	adm, err := store.NewAdmin(store.Config{Endpoint: d.URL, AccessKey: storetest.AccessKey, SecretKey: storetest.SecretKey})
	require.NoError(t, err)

	changed, err := adm.EnsureBucketUser(ctx, "ray", "labuser", "labsecret1")
	require.NoError(t, err)
	assert.Equal(t, "created", changed.String(), "what it did, in words, never MinIO's error text")
	secret, policies, ok := d.User("labuser")
	require.True(t, ok)
	assert.Equal(t, "labsecret1", secret)
	assert.Equal(t, []string{store.BucketPolicyName("ray")}, policies)
	buckets, ok := d.PolicyBuckets(store.BucketPolicyName("ray"))
	require.True(t, ok)
	assert.Equal(t, []string{"ray"}, buckets)

	// Again: everything is in place, nothing is written (each write costs
	// MinIO an argon2 key derivation).
	writes := d.AdminWrites()
	changed, err = adm.EnsureBucketUser(ctx, "ray", "labuser", "labsecret1")
	require.NoError(t, err)
	assert.Equal(t, "unchanged", changed.String())
	assert.Equal(t, writes, d.AdminWrites(), "a re-run that finds the user in place writes nothing")

	// Someone attached another policy: the user is limited again.
	d.AttachPolicy("labuser", "readwrite")
	changed, err = adm.EnsureBucketUser(ctx, "ray", "labuser", "labsecret2")
	require.NoError(t, err, "MinIO refuses the second attach (already applied), which is fine")
	assert.Equal(t, "updated (user limited to policy mltrain-bucket-ray)", changed.String())
	secret, policies, _ = d.User("labuser")
	assert.Equal(t, "labsecret2", secret)
	assert.Equal(t, []string{store.BucketPolicyName("ray")}, policies, "the other policy was detached")

	user, err := store.New(store.Config{Endpoint: d.URL, AccessKey: "labuser", SecretKey: "labsecret2"})
	require.NoError(t, err)
	_, err = user.ListCheckpoints(ctx, "ray", "")
	assert.NoError(t, err, "the lab user lists its bucket")
	_, err = user.ListCheckpoints(ctx, "other", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AccessDenied", "another bucket is refused before it is found missing")
	_, err = user.EnsureBucket(ctx, "other")
	assert.ErrorContains(t, err, "AccessDenied")
}

func TestEnsureBucketUserWithWrongRootSaysWhy(t *testing.T) {
	d := storetest.New(t)
	adm, err := store.NewAdmin(store.Config{Endpoint: d.URL, AccessKey: "NOTROOT", SecretKey: storetest.SecretKey})
	require.NoError(t, err)
	_, err = adm.EnsureBucketUser(context.Background(), "ray", "labuser", "labsecret1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "root credentials refused (InvalidAccessKeyId)")
	assert.ErrorIs(t, err, store.ErrRootRefused)

	_, err = store.NewAdmin(store.Config{Endpoint: d.URL})
	assert.ErrorIs(t, err, store.ErrNoAdmin)
}

func TestBucketPolicyNamesOnlyTheBucket(t *testing.T) {
	assert.JSONEq(t, `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetBucketLocation","s3:ListBucket","s3:ListBucketMultipartUploads"],"Resource":["arn:aws:s3:::ray"]},
		{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:ListMultipartUploadParts","s3:AbortMultipartUpload"],"Resource":["arn:aws:s3:::ray/*"]}]}`,
		string(store.BucketPolicy("ray")))
}

// The keys every notebook and Ray node holds configure nothing: no
// wildcard, and no action on the bucket's policy, ACL, lifecycle,
// versioning, replication, encryption, tagging, notifications, or buckets.
func TestBucketPolicyGrantsNoBucketConfiguration(t *testing.T) {
	for _, a := range append(append([]string{}, store.BucketActions...), store.ObjectActions...) {
		assert.NotContains(t, a, "*", "a wildcard grants what is not listed")
		for _, word := range []string{"Policy", "Acl", "Lifecycle", "Versioning", "Replication", "Encryption", "Tagging", "Notification", "CreateBucket", "DeleteBucket", "ObjectLock", "Retention", "LegalHold"} {
			assert.NotContains(t, a, word, "the lab user may not change the bucket's configuration")
		}
	}
}
