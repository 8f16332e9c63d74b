package backup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
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
			return Target{}, clierr.WithCode(fmt.Errorf("%q names no bucket: write s3://BUCKET/PREFIX", s), clierr.ExitUsage)
		}
		prefix = strings.Trim(prefix, "/")
		if prefix != "" {
			prefix += "/"
		}
		return Target{Bucket: bucket, Prefix: prefix}, nil
	}
	if !strings.HasSuffix(s, ".tar.gz") {
		return Target{}, clierr.WithCode(fmt.Errorf("%q is neither a path ending in .tar.gz nor an s3://bucket/prefix URL", s), clierr.ExitUsage)
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
	region    string
}

// openRemote builds the S3 client from the settings s, or when s is nil
// from the environment as ResolveS3 reads it.
func openRemote(s *S3Settings) (*remote, error) {
	if s == nil {
		got, err := ResolveS3()
		if err != nil {
			return nil, err
		}
		s = &got
	}
	r := &remote{endpoint: "https://s3.amazonaws.com", fromVar: s.EndpointVar, credsFrom: s.From, region: s.Region}
	if s.Endpoint != "" {
		r.endpoint = s.Endpoint
	}
	u, err := url.Parse(r.endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, clierr.Hintf("set "+r.fromVar+" to a URL like https://s3.example.com or http://127.0.0.1:9000", "%s=%q is not an http(s) URL", r.fromVar, r.endpoint)
	}
	creds := credentials.NewStaticV4(s.AccessKey, s.SecretKey, s.SessionToken)
	r.mc, err = minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: s.Region})
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
	if err := r.mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: r.region}); err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "BucketAlreadyOwnedByYou" || er.Code == "BucketAlreadyExists") {
			return nil
		}
		return r.wrap("creating bucket "+bucket, err)
	}
	return nil
}
