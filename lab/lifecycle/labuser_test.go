package lifecycle_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// s3As is a plain S3 client of the lab's real MinIO with the given keys.
func s3As(t *testing.T, endpoint, access, secret string) *minio.Client {
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	return c
}

func s3Code(err error) string { return minio.ToErrorResponse(err).Code }

// Against the real MinIO of a stand-in lab: Jupyter and the Ray nodes hold
// the lab user's keys and never the root's; the lab user writes and lists
// checkpoints in "ray" and is refused everything outside it; a second up
// converges with the user in place.
func TestUpGivesJupyterAndRayAUserLimitedToTheBucket(t *testing.T) {
	s := newStandinLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := s.up(ctx)
	require.NoError(t, err)
	dir := state.Dir(s.stateDir)
	c, err := dir.Credentials()
	require.NoError(t, err)
	st, err := dir.State()
	require.NoError(t, err)

	for svc, id := range s.ids() {
		d, err := s.eng.ContainerInspect(ctx, id)
		require.NoError(t, err)
		env := strings.Join(d.Env, "\n")
		if svc == service.MinIOService {
			assert.Contains(t, env, "MINIO_ROOT_USER="+c.MinIOAccessKey)
			continue
		}
		assert.NotContains(t, env, c.MinIOAccessKey, "%s holds MinIO's root user", svc)
		assert.NotContains(t, env, c.MinIOSecretKey, "%s holds MinIO's root password", svc)
		if svc == service.JupyterService || strings.HasPrefix(svc, "ray-") {
			assert.Contains(t, d.Env, "AWS_ACCESS_KEY_ID="+c.MinIOLabAccessKey, svc)
			assert.Contains(t, d.Env, "AWS_SECRET_ACCESS_KEY="+c.MinIOLabSecretKey, svc)
		}
	}

	user := s3As(t, st.Probes.MinIO, c.MinIOLabAccessKey, c.MinIOLabSecretKey)
	body := []byte("a checkpoint's weights")
	_, err = user.PutObject(ctx, store.DefaultBucket, "lab-user/checkpoint_000000/model.pt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	require.NoError(t, err, "the lab user writes checkpoints in ray")
	us, err := store.New(store.Config{Endpoint: st.Probes.MinIO, AccessKey: c.MinIOLabAccessKey, SecretKey: c.MinIOLabSecretKey})
	require.NoError(t, err)
	cps, err := us.ListCheckpoints(ctx, store.DefaultBucket, "lab-user/")
	require.NoError(t, err)
	require.Len(t, cps, 1)
	assert.Equal(t, "s3://ray/lab-user/checkpoint_000000", cps[0].URI())

	err = user.MakeBucket(ctx, "lab-user-other", minio.MakeBucketOptions{})
	assert.Equal(t, "AccessDenied", s3Code(err), "the lab user creates no bucket: %v", err)

	root := s3As(t, st.Probes.MinIO, c.MinIOAccessKey, c.MinIOSecretKey)
	require.NoError(t, root.MakeBucket(ctx, "outside", minio.MakeBucketOptions{}))
	_, err = root.PutObject(ctx, "outside", "secret.txt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	require.NoError(t, err)
	_, err = user.StatObject(ctx, "outside", "secret.txt", minio.StatObjectOptions{})
	assert.Equal(t, "AccessDenied", s3Code(err), "the lab user reads nothing outside ray: %v", err)
	for obj := range user.ListObjects(ctx, "outside", minio.ListObjectsOptions{}) {
		assert.Equal(t, "AccessDenied", s3Code(obj.Err), "the lab user lists nothing outside ray: %v", obj.Err)
	}
	_, err = user.ListBuckets(ctx)
	if err == nil {
		buckets, _ := user.ListBuckets(ctx)
		for _, b := range buckets {
			assert.Equal(t, store.DefaultBucket, b.Name, "the lab user sees no other bucket")
		}
	}

	// A second up finds the user and its policy in place.
	var rec progress.Recorder
	_, err = lifecycle.Up(ctx, s.deps(&rec), s.opts)
	require.NoError(t, err)
	inPlace := false
	for _, e := range rec.Events() {
		inPlace = inPlace || e.Step == "minio lab user" && e.Kind == progress.Done && e.Message == `unchanged, bucket "ray" only`
	}
	assert.True(t, inPlace, "the second up found the user in place: %v", rec.Events())
	_, err = us.ListCheckpoints(ctx, store.DefaultBucket, "lab-user/")
	require.NoError(t, err)

	// A lab made before issue 31: the lab user's policy was s3:* on ray,
	// and with it the user made the bucket public. The next up rewrites
	// the policy, says so, and removes the bucket's policy.
	adm, err := madmin.NewWithOptions(strings.TrimPrefix(st.Probes.MinIO, "http://"), &madmin.Options{Creds: credentials.NewStaticV4(c.MinIOAccessKey, c.MinIOSecretKey, "")})
	require.NoError(t, err)
	require.NoError(t, adm.AddCannedPolicy(ctx, store.BucketPolicyName(store.DefaultBucket),
		[]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::ray","arn:aws:s3:::ray/*"]}]}`)))
	require.NoError(t, user.SetBucketPolicy(ctx, store.DefaultBucket, publicPolicy), "the old policy let the lab user do this")
	open, err := store.AnonymousAccess(ctx, store.Config{Endpoint: st.Probes.MinIO}, store.DefaultBucket, "lab-user/none")
	require.NoError(t, err)
	require.Equal(t, []string{store.AnonymousList, store.AnonymousRead}, open)
	rec = progress.Recorder{}
	_, err = lifecycle.Up(ctx, s.deps(&rec), s.opts)
	require.NoError(t, err)
	said := map[string]string{}
	for _, e := range rec.Events() {
		if e.Kind == progress.Done {
			said[e.Step] = e.Message
		}
	}
	assert.Equal(t, `updated (policy mltrain-bucket-ray rewritten: object actions on bucket ray only), bucket "ray" only`, said["minio lab user"])
	assert.Equal(t, `"ray" in place; its bucket policy removed (the lab allows no anonymous access)`, said["bucket"])
	open, err = store.AnonymousAccess(ctx, store.Config{Endpoint: st.Probes.MinIO}, store.DefaultBucket, "lab-user/none")
	require.NoError(t, err)
	assert.Empty(t, open, "anonymous requests are refused again")
	err = user.SetBucketPolicy(ctx, store.DefaultBucket, publicPolicy)
	assert.Equal(t, "AccessDenied", s3Code(err), "the lab user sets no bucket policy: %v", err)

	// A new lab secret (credentials.json edited): up sets it in MinIO, and
	// the old one stops working; only a signed call can tell them apart.
	c.MinIOLabSecretKey = "NEWLABSECRET0000000000000000000000000000"
	require.NoError(t, dir.WriteJSON(state.CredentialsFile, c))
	rec = progress.Recorder{}
	_, err = lifecycle.Up(ctx, s.deps(&rec), s.opts)
	require.NoError(t, err)
	said = map[string]string{}
	for _, e := range rec.Events() {
		if e.Kind == progress.Done {
			said[e.Step] = e.Message
		}
	}
	assert.Equal(t, `updated (secret reset), bucket "ray" only`, said["minio lab user"], "up says in words what it changed")
	fresh, err := store.New(store.Config{Endpoint: st.Probes.MinIO, AccessKey: c.MinIOLabAccessKey, SecretKey: c.MinIOLabSecretKey})
	require.NoError(t, err)
	_, err = fresh.ListCheckpoints(ctx, store.DefaultBucket, "lab-user/")
	require.NoError(t, err, "the new secret works")
	_, err = us.ListCheckpoints(ctx, store.DefaultBucket, "lab-user/")
	assert.ErrorContains(t, err, "SignatureDoesNotMatch", "the old one is refused")
}
