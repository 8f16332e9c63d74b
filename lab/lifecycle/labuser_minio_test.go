package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	ilm "github.com/minio/minio-go/v7/pkg/lifecycle"
	"github.com/minio/minio-go/v7/pkg/notification"
	"github.com/minio/minio-go/v7/pkg/replication"
	"github.com/minio/minio-go/v7/pkg/signer"
	"github.com/minio/minio-go/v7/pkg/sse"
	"github.com/minio/minio-go/v7/pkg/tags"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/labtest"
)

// publicPolicy is what a holder of the lab user's keys would plant: anyone
// lists, reads and writes the bucket (`mc anonymous set public`).
const publicPolicy = `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::ray"]},
 {"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::ray/*"]}]}`

// labUserOnRealMinIO starts a real MinIO, makes bucket ray and the lab
// user as up does (store.Admin.EnsureBucketUser), and returns the server
// and an S3 client holding the lab user's keys.
func labUserOnRealMinIO(t *testing.T, ctx context.Context) (labtest.MinIOServer, *minio.Client, [2]string) {
	s := labtest.StartMinIO(t)
	root, err := store.New(store.Config{Endpoint: s.URL, AccessKey: s.RootUser, SecretKey: s.RootPassword})
	require.NoError(t, err)
	_, err = root.EnsureBucket(ctx, store.DefaultBucket)
	require.NoError(t, err)
	adm, err := store.NewAdmin(store.Config{Endpoint: s.URL, AccessKey: s.RootUser, SecretKey: s.RootPassword})
	require.NoError(t, err)
	keys := [2]string{"lab" + strings.ToUpper(s.RootPassword[:12]), s.RootPassword[12:] + "x"}
	changed, err := adm.EnsureBucketUser(ctx, store.DefaultBucket, keys[0], keys[1])
	require.NoError(t, err)
	require.Equal(t, "created", changed.String())
	return s, s3As(t, s.URL, keys[0], keys[1]), keys
}

// With the keys every notebook and Ray node holds, real MinIO refuses every
// change to the bucket's configuration and the buckets themselves, and
// allows what Ray Train's storage does: list, put, get, copy, delete, and
// multipart uploads. After the refused PutBucketPolicy nothing is open to
// anonymous requests.
func TestTheLabUserOnRealMinIOHasObjectActionsOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, user, keys := labUserOnRealMinIO(t, ctx)
	const b = store.DefaultBucket

	err := user.SetBucketPolicy(ctx, b, publicPolicy)
	require.Equal(t, "AccessDenied", s3Code(err), "PutBucketPolicy with the lab user's keys: %v", err)
	// Anonymous requests stay refused: the policy was never set.
	open, err := store.AnonymousAccess(ctx, store.Config{Endpoint: s.URL}, b, "planted/none")
	require.NoError(t, err)
	assert.Empty(t, open, "anonymous list or read of bucket ray")
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.URL+"/"+b+"/planted/checkpoint.pkl", strings.NewReader("pickle"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "an anonymous PUT plants no checkpoint")

	for _, c := range []struct {
		action string
		call   func() error
	}{
		{"GetBucketPolicy", func() error { _, err := user.GetBucketPolicy(ctx, b); return err }},
		{"DeleteBucketPolicy", func() error { return user.SetBucketPolicy(ctx, b, "") }},
		{"PutBucketAcl", func() error {
			return signedPut(t, ctx, s.URL+"/"+b+"?acl", keys, map[string]string{"x-amz-acl": "public-read-write"})
		}},
		{"PutBucketLifecycle", func() error {
			return user.SetBucketLifecycle(ctx, b, &ilm.Configuration{Rules: []ilm.Rule{{ID: "wipe", Status: "Enabled", Expiration: ilm.Expiration{Days: 1}}}})
		}},
		{"PutBucketVersioning", func() error { return user.EnableVersioning(ctx, b) }},
		{"PutBucketReplication", func() error {
			return user.SetBucketReplication(ctx, b, replication.Config{Rules: []replication.Rule{{ID: "out", Status: replication.Enabled, Priority: 1,
				Destination: replication.Destination{Bucket: "arn:minio:replication::x:elsewhere"}}}})
		}},
		{"PutBucketEncryption", func() error { return user.SetBucketEncryption(ctx, b, sse.NewConfigurationSSES3()) }},
		{"PutBucketTagging", func() error { return user.SetBucketTagging(ctx, b, mustTags(t)) }},
		{"PutBucketNotification", func() error { return user.SetBucketNotification(ctx, b, notification.Configuration{}) }},
		{"MakeBucket (another)", func() error { return user.MakeBucket(ctx, "lab-user-other", minio.MakeBucketOptions{}) }},
		{"DeleteBucket", func() error { return user.RemoveBucket(ctx, b) }}, // last: an empty bucket would go
	} {
		err := c.call()
		assert.Equal(t, "AccessDenied", s3Code(err), "%s with the lab user's keys: %v", c.action, err)
	}

	// What Ray Train's pyarrow S3FileSystem and the notebooks do.
	body := []byte("a checkpoint's weights")
	_, err = user.PutObject(ctx, b, "run/checkpoint_000000/model.pt", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	require.NoError(t, err, "PutObject")
	_, err = user.PutObject(ctx, b, "run/", bytes.NewReader(nil), 0, minio.PutObjectOptions{})
	require.NoError(t, err, "a directory marker (pyarrow create_dir)")
	o, err := user.GetObject(ctx, b, "run/checkpoint_000000/model.pt", minio.GetObjectOptions{})
	require.NoError(t, err)
	got, err := io.ReadAll(o)
	require.NoError(t, err, "GetObject")
	assert.Equal(t, body, got)
	_, err = user.StatObject(ctx, b, "run/checkpoint_000000/model.pt", minio.StatObjectOptions{})
	require.NoError(t, err, "HeadObject")
	_, err = user.CopyObject(ctx, minio.CopyDestOptions{Bucket: b, Object: "run/moved.pt"}, minio.CopySrcOptions{Bucket: b, Object: "run/checkpoint_000000/model.pt"})
	require.NoError(t, err, "CopyObject (pyarrow move)")
	var listed []string
	for obj := range user.ListObjects(ctx, b, minio.ListObjectsOptions{Prefix: "run/", Recursive: true}) {
		require.NoError(t, obj.Err, "ListObjectsV2")
		listed = append(listed, obj.Key)
	}
	assert.Contains(t, listed, "run/moved.pt")
	loc, err := s3As(t, s.URL, keys[0], keys[1]).GetBucketLocation(ctx, b)
	require.NoError(t, err, "GetBucketLocation")
	assert.NotEmpty(t, loc)

	core := minio.Core{Client: user}
	part := bytes.Repeat([]byte("w"), 1024)
	id, err := core.NewMultipartUpload(ctx, b, "run/big.pt", minio.PutObjectOptions{})
	require.NoError(t, err, "CreateMultipartUpload")
	p1, err := core.PutObjectPart(ctx, b, "run/big.pt", id, 1, bytes.NewReader(part), int64(len(part)), minio.PutObjectPartOptions{})
	require.NoError(t, err, "UploadPart")
	// MinIO lists the uploads of the one object the prefix names.
	uploads, err := core.ListMultipartUploads(ctx, b, "run/big.pt", "", "", "", 10)
	require.NoError(t, err, "ListMultipartUploads")
	assert.Len(t, uploads.Uploads, 1)
	parts, err := core.ListObjectParts(ctx, b, "run/big.pt", id, 0, 10)
	require.NoError(t, err, "ListParts")
	assert.Len(t, parts.ObjectParts, 1)
	_, err = core.CompleteMultipartUpload(ctx, b, "run/big.pt", id, []minio.CompletePart{{PartNumber: 1, ETag: p1.ETag}}, minio.PutObjectOptions{})
	require.NoError(t, err, "CompleteMultipartUpload")
	id, err = core.NewMultipartUpload(ctx, b, "run/abandoned.pt", minio.PutObjectOptions{})
	require.NoError(t, err)
	require.NoError(t, core.AbortMultipartUpload(ctx, b, "run/abandoned.pt", id), "AbortMultipartUpload")

	require.NoError(t, user.RemoveObject(ctx, b, "run/moved.pt", minio.RemoveObjectOptions{}), "DeleteObject")
	objs := make(chan minio.ObjectInfo, 2)
	objs <- minio.ObjectInfo{Key: "run/big.pt"}
	objs <- minio.ObjectInfo{Key: "run/"}
	close(objs)
	for e := range user.RemoveObjects(ctx, b, objs, minio.RemoveObjectsOptions{}) {
		assert.NoError(t, e.Err, "DeleteObjects (pyarrow delete_dir) %s", e.ObjectName)
	}
}

func mustTags(t *testing.T) *tags.Tags {
	tg, err := tags.NewTags(map[string]string{"owner": "someone"}, false)
	require.NoError(t, err)
	return tg
}

// signedPut sends a PUT signed with keys, for the calls minio-go has no
// method for (PutBucketAcl), and returns MinIO's answer as an error.
func signedPut(t *testing.T, ctx context.Context, url string, keys [2]string, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, http.NoBody)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") // empty body
	resp, err := http.DefaultClient.Do(signer.SignV4(*req, keys[0], keys[1], "", "us-east-1"))
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var er minio.ErrorResponse
	b, _ := io.ReadAll(resp.Body)
	_ = xml.Unmarshal(b, &er) // an S3 error document; its Code stays empty otherwise
	er.StatusCode = resp.StatusCode
	return er
}
