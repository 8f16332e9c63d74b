package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/internal/store/storetest"
)

// A bucket's own policy is read, removed once (a re-run finds none), and
// what it let anonymous requests do is found by probes that change nothing.
func TestBucketPolicyIsReadRemovedAndProbed(t *testing.T) {
	d := storetest.New(t)
	d.MakeBucket("ray")
	ctx := context.Background()
	root := d.Client(t, storetest.AccessKey)
	cfg := store.Config{Endpoint: d.URL}

	p, err := root.BucketPolicy(ctx, "ray")
	require.NoError(t, err)
	assert.Empty(t, p, "a fresh bucket has no policy")
	open, err := store.AnonymousAccess(ctx, cfg, "ray", ".probe/none")
	require.NoError(t, err)
	assert.Empty(t, open, "anonymous requests are refused")

	d.SetBucketPolicy("ray", storetest.AnonymousReadPolicy("ray"))
	p, err = root.BucketPolicy(ctx, "ray")
	require.NoError(t, err)
	assert.Contains(t, p, `"Principal"`)
	open, err = store.AnonymousAccess(ctx, cfg, "ray", ".probe/none")
	require.NoError(t, err)
	assert.Equal(t, []string{store.AnonymousList, store.AnonymousRead}, open)

	removed, err := root.RemoveBucketPolicy(ctx, "ray")
	require.NoError(t, err)
	assert.True(t, removed)
	assert.Empty(t, d.BucketPolicy("ray"))
	removed, err = root.RemoveBucketPolicy(ctx, "ray")
	require.NoError(t, err)
	assert.False(t, removed, "nothing to remove the second time")
	open, err = store.AnonymousAccess(ctx, cfg, "ray", ".probe/none")
	require.NoError(t, err)
	assert.Empty(t, open)

	_, err = store.AnonymousAccess(ctx, store.Config{Endpoint: "http://127.0.0.1:1"}, "ray", "k")
	assert.ErrorIs(t, err, store.ErrUnreachable)
}

// In the double as in MinIO, the lab user's policy lets it list the bucket
// and refuses it the bucket's policy.
func TestTheLabUserMayNotReadOrSetTheBucketPolicy(t *testing.T) {
	d := storetest.New(t)
	d.MakeBucket("ray")
	ctx := context.Background()
	adm, err := store.NewAdmin(store.Config{Endpoint: d.URL, AccessKey: storetest.AccessKey, SecretKey: storetest.SecretKey})
	require.NoError(t, err)
	_, err = adm.EnsureBucketUser(ctx, "ray", "labuser", "labsecret1")
	require.NoError(t, err)
	user, err := store.New(store.Config{Endpoint: d.URL, AccessKey: "labuser", SecretKey: "labsecret1"})
	require.NoError(t, err)
	_, err = user.ListCheckpoints(ctx, "ray", "")
	require.NoError(t, err)
	_, err = user.BucketPolicy(ctx, "ray")
	assert.ErrorContains(t, err, "AccessDenied")
	_, err = user.RemoveBucketPolicy(ctx, "ray")
	assert.ErrorContains(t, err, "AccessDenied")
}
