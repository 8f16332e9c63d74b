package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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

// AnonymousActions are the actions a bucket policy document allows anyone
// (Principal "*"), sorted; none when it is not a policy.
func AnonymousActions(doc string) []string {
	var p struct {
		Statement []struct {
			Effect    string
			Principal json.RawMessage
			Action    json.RawMessage
		}
	}
	if json.Unmarshal([]byte(doc), &p) != nil {
		return nil
	}
	var out []string
	for _, st := range p.Statement {
		if st.Effect != "Allow" || !anyone(st.Principal) {
			continue
		}
		for _, a := range oneOrMany(st.Action) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return out
}

// anyone says whether a policy's Principal is everyone: "*" or {"AWS": "*"}
// ({"AWS": ["*"]}).
func anyone(principal json.RawMessage) bool {
	var aws struct{ AWS json.RawMessage }
	if json.Unmarshal(principal, &aws) == nil && aws.AWS != nil {
		return slices.Contains(oneOrMany(aws.AWS), "*")
	}
	return slices.Contains(oneOrMany(principal), "*")
}

// oneOrMany reads a policy field that is a string or a list of them.
func oneOrMany(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many) // anything else names nothing
	return many
}
