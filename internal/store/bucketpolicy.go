package store

import (
	"context"
	"fmt"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// BucketPolicy is bucket's own policy (S3's resource policy, not a user's):
// "" when it has none. The lab's bucket has none: MinIO grants anonymous
// access only through one.
func (c *Client) BucketPolicy(ctx context.Context, bucket string) (string, error) {
	p, err := c.mc.GetBucketPolicy(ctx, bucket)
	if err != nil {
		return "", c.wrap("read the policy of bucket "+bucket, err)
	}
	return p, nil
}

// RemoveBucketPolicy deletes bucket's policy, and says whether it had one.
// Re-running is harmless.
func (c *Client) RemoveBucketPolicy(ctx context.Context, bucket string) (bool, error) {
	p, err := c.BucketPolicy(ctx, bucket)
	if err != nil || p == "" {
		return false, err
	}
	if err := c.mc.SetBucketPolicy(ctx, bucket, ""); err != nil { // "" deletes it
		return false, c.wrap("remove the policy of bucket "+bucket, err)
	}
	return true, nil
}

// What an anonymous request may do in a bucket (AnonymousAccess).
const (
	AnonymousList = "list"
	AnonymousRead = "read"
)

// AnonymousAccess probes, with unsigned requests that change nothing, what
// anyone who reaches cfg.Endpoint may do in bucket: AnonymousList when a
// listing is answered, AnonymousRead when a GET of probeKey (a key that
// does not exist) is answered "no such key" rather than refused. None means
// both were refused. cfg's keys are not used.
func AnonymousAccess(ctx context.Context, cfg Config, bucket, probeKey string) ([]string, error) {
	host, secure, err := hostOf(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	mc, err := minio.New(host, &minio.Options{Creds: credentials.NewStatic("", "", "", credentials.SignatureAnonymous),
		Secure: secure, Region: region, BucketLookup: minio.BucketLookupPath, Transport: cfg.Transport})
	if err != nil {
		return nil, fmt.Errorf("anonymous MinIO client for %s: %w", cfg.Endpoint, err)
	}
	c := &Client{mc: mc, endpoint: cfg.Endpoint}
	var open []string
	lctx, cancel := context.WithCancel(ctx)
	defer cancel() // one answer is enough
	for obj := range mc.ListObjects(lctx, bucket, minio.ListObjectsOptions{Prefix: probeKey, MaxKeys: 1}) {
		err = obj.Err
		break
	}
	switch code := minio.ToErrorResponse(err).Code; {
	case err == nil:
		open = append(open, AnonymousList)
	case code != "AccessDenied":
		return nil, c.wrap("list bucket "+bucket+" anonymously", err)
	}
	_, err = mc.StatObject(ctx, bucket, probeKey, minio.StatObjectOptions{})
	switch code := minio.ToErrorResponse(err).Code; {
	case err == nil || code == "NoSuchKey":
		open = append(open, AnonymousRead)
	case code != "AccessDenied":
		return nil, c.wrap("read "+bucket+"/"+probeKey+" anonymously", err)
	}
	return open, nil
}
