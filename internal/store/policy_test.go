package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// MinIO stores a statement's actions and resources as sets and re-indents
// the document: what it hands back is the same policy in another order.
func TestSamePolicyIgnoresOrderAndLayout(t *testing.T) {
	ours := BucketPolicy("ray")
	minio := []byte(`{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Action": ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:DeleteObject", "s3:PutObject", "s3:GetObject"],
     "Resource": ["arn:aws:s3:::ray/*"]},
    {"Effect": "Allow", "Action": ["s3:ListBucketMultipartUploads", "s3:ListBucket", "s3:GetBucketLocation"],
     "Resource": ["arn:aws:s3:::ray"]}]
}`)
	assert.True(t, samePolicy(minio, ours))
	assert.True(t, samePolicy(ours, ours))

	for name, other := range map[string]string{
		// What labs before issue 31 were given: up rewrites it.
		"every action on the bucket": `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::ray","arn:aws:s3:::ray/*"]}]}`,
		"another bucket":             `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::ray2","arn:aws:s3:::ray2/*"]}]}`,
		"every bucket":               `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}`,
		"admin too":                  `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*","admin:*"],"Resource":["arn:aws:s3:::ray","arn:aws:s3:::ray/*"]}]}`,
		"not JSON":                   `Version: 2012-10-17`,
	} {
		assert.False(t, samePolicy([]byte(other), ours), name)
	}
}
