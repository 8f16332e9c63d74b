package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

// The lab-user line of up says what happened to the user in words (created,
// updated and why, unchanged), never an error's text: a fresh MinIO has no
// policy yet, which once showed as "set (policy ...: The canned policy does
// not exist...)" in a success line.
func TestUpSaysWhatItDidToTheLabUserInWords(t *testing.T) {
	f := newFakeLab(t)
	line := func() string { return upLine(t, f, "minio lab user") }
	assert.Equal(t, `created, bucket "ray" only`, line(), "a fresh MinIO")
	assert.Equal(t, `unchanged, bucket "ray" only`, line(), "a second up")
	c, err := f.state.Credentials()
	require.NoError(t, err)
	f.s3.AttachPolicy(c.MinIOLabAccessKey, "readwrite")
	assert.Equal(t, `updated (user limited to policy mltrain-bucket-ray), bucket "ray" only`, line(), "someone widened the user")
}

// upLine runs up on the fake lab and returns step's Done line.
func upLine(t *testing.T, f *fakeLab, step string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rec progress.Recorder
	_, err := lifecycle.Up(ctx, f.deps(&rec), f.opts)
	require.NoError(t, err)
	for _, e := range rec.Events() {
		if e.Step == step && e.Kind == progress.Done {
			return e.Message
		}
	}
	t.Fatalf("no %q line in %v", step, rec.Events())
	return ""
}

// A lab made before issue 31 gave the lab user s3:* on the bucket, with
// which it could make the bucket public. The next up rewrites the policy to
// the object actions, says so, and removes the bucket policy planted with it.
func TestUpConvergesALabUserThatCouldConfigureTheBucket(t *testing.T) {
	f := newFakeLab(t)
	assert.Equal(t, `"ray" created`, upLine(t, f, "bucket"))
	c, err := f.state.Credentials()
	require.NoError(t, err)
	name := store.BucketPolicyName(store.DefaultBucket)
	f.s3.AddPolicy(name, []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::ray","arn:aws:s3:::ray/*"]}]}`))
	old, err := store.New(store.Config{Endpoint: f.s3.URL, AccessKey: c.MinIOLabAccessKey, SecretKey: c.MinIOLabSecretKey})
	require.NoError(t, err)
	f.s3.SetBucketPolicy(store.DefaultBucket, storetest.AnonymousReadPolicy(store.DefaultBucket))
	_, err = old.RemoveBucketPolicy(context.Background(), store.DefaultBucket)
	require.NoError(t, err, "s3:* let the lab user change the bucket's policy")
	f.s3.SetBucketPolicy(store.DefaultBucket, storetest.AnonymousReadPolicy(store.DefaultBucket)) // as it would have planted

	var rec progress.Recorder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = lifecycle.Up(ctx, f.deps(&rec), f.opts)
	require.NoError(t, err)
	said := map[string]string{}
	for _, e := range rec.Events() {
		if e.Kind == progress.Done {
			said[e.Step] = e.Message
		}
	}
	assert.Equal(t, `updated (policy mltrain-bucket-ray rewritten: object actions on bucket ray only), bucket "ray" only`, said["minio lab user"])
	assert.Equal(t, `"ray" in place; its bucket policy removed (the lab allows no anonymous access)`, said["bucket"])
	assert.Empty(t, f.s3.BucketPolicy(store.DefaultBucket))
	_, err = old.RemoveBucketPolicy(ctx, store.DefaultBucket)
	assert.ErrorContains(t, err, "AccessDenied", "the lab user configures the bucket no more")
	assert.Equal(t, `"ray" in place`, upLine(t, f, "bucket"), "a third up finds nothing to remove")
}
