package backup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Target is where a backup goes or a restore reads: a .tar.gz file or an
// S3 prefix.
type Target struct {
	File   string // a path ending in .tar.gz
	Bucket string // s3://Bucket/Prefix
	Prefix string // "" or ending in "/"
}

// ParseTarget reads DEST or SRC as the user typed it.
func ParseTarget(s string) (Target, error) {
	if rest, ok := strings.CutPrefix(s, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return Target{}, clierr.Usage(fmt.Errorf("%q names no bucket: write s3://BUCKET/PREFIX", s), "")
		}
		prefix = strings.Trim(prefix, "/")
		if prefix != "" {
			prefix += "/"
		}
		return Target{Bucket: bucket, Prefix: prefix}, nil
	}
	if !strings.HasSuffix(s, ".tar.gz") {
		return Target{}, clierr.Usage(fmt.Errorf("%q is neither a path ending in .tar.gz nor an s3://bucket/prefix URL", s), "")
	}
	return Target{File: s}, nil
}

func (t Target) String() string {
	if t.File != "" {
		return t.File
	}
	return "s3://" + t.Bucket + "/" + t.Prefix
}

// remote is an S3 endpoint configured as the AWS tools are, and which of the
// user's settings said so (for errors that name them).
type remote struct {
	mc        *minio.Client
	endpoint  string
	fromVar   string // the variable that named the endpoint, "" for AWS's default
	credsFrom string // the variables or file the keys came from
}

// openRemote builds the S3 client from AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL (AWS's own endpoint when neither is set), AWS_REGION,
// and minio-go's chain of the AWS_* variables and ~/.aws/credentials
// (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE): the settings aws s3 reads.
func openRemote() (*remote, error) {
	r := &remote{endpoint: "https://s3.amazonaws.com"}
	for _, v := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if e := os.Getenv(v); e != "" {
			r.endpoint, r.fromVar = e, v
			break
		}
	}
	u, err := url.Parse(r.endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, clierr.Hintf("set "+r.fromVar+" to a URL like https://s3.example.com or http://127.0.0.1:9000", "%s=%q is not an http(s) URL", r.fromVar, r.endpoint)
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}})
	r.credsFrom = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_ACCESS_KEY") == "" {
		file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
		if file == "" {
			home, _ := os.UserHomeDir()
			file = filepath.Join(home, ".aws", "credentials")
		}
		profile := os.Getenv("AWS_PROFILE")
		if profile == "" {
			profile = "default"
		}
		r.credsFrom = fmt.Sprintf("profile %q of %s (AWS_PROFILE)", profile, file)
	}
	if v, err := creds.GetWithContext(nil); err != nil || v.AccessKeyID == "" {
		return nil, clierr.Hintf("export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL for MinIO or Ceph), or set AWS_PROFILE to a profile of ~/.aws/credentials",
			"no S3 credentials: AWS_ACCESS_KEY_ID is not set and %s has none", strings.TrimPrefix(r.credsFrom, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"))
	}
	r.mc, err = minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: region})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", r.endpoint, err)
	}
	return r, nil
}

// wrap names, in an S3 error, the setting to fix: the keys' variables when
// the keys are refused, the endpoint's when nothing answered.
func (r *remote) wrap(what string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	where := r.endpoint
	if r.fromVar != "" {
		where = fmt.Sprintf("%s (%s)", r.endpoint, r.fromVar)
	}
	var er minio.ErrorResponse
	if !errors.As(err, &er) || er.Code == "" {
		return clierr.WithHint(fmt.Errorf("%s: S3 endpoint %s did not answer: %w", what, where, err),
			"check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3): the S3 service's URL, e.g. http://HOST:9000 for MinIO")
	}
	switch er.Code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
		return clierr.WithHint(fmt.Errorf("%s: S3 endpoint %s refused the keys from %s (%s): %w", what, where, r.credsFrom, er.Code, err),
			"check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) or AWS_PROFILE")
	case "AccessDenied":
		// A HEAD request's refusal has no body: wrong keys and keys without
		// the permission both read AccessDenied.
		return clierr.WithHint(fmt.Errorf("%s: S3 endpoint %s refused the keys from %s (AccessDenied: wrong keys, or keys without permission): %w", what, where, r.credsFrom, err),
			"check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and that they may s3:ListBucket, s3:GetObject and s3:PutObject on the bucket (s3:CreateBucket to make it)")
	}
	return fmt.Errorf("%s on S3 endpoint %s: %w", what, where, err)
}

// ensureBucket makes the bucket when it is missing.
func (r *remote) ensureBucket(ctx context.Context, bucket string) error {
	ok, err := r.mc.BucketExists(ctx, bucket)
	if err != nil {
		return r.wrap("checking bucket "+bucket, err)
	}
	if ok {
		return nil
	}
	if err := r.mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: os.Getenv("AWS_REGION")}); err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "BucketAlreadyOwnedByYou" || er.Code == "BucketAlreadyExists") {
			return nil
		}
		return r.wrap("creating bucket "+bucket, err)
	}
	return nil
}
