// Package store is mltrain's view of the lab's MinIO: the bucket Ray Train
// writes checkpoints to, and the checkpoints in it.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mltrain/mltrain/internal/clierr"
)

// DefaultBucket is where the lab's Ray Train runs store checkpoints (s3://ray).
const DefaultBucket = "ray"

// Config says how to reach MinIO.
type Config struct {
	// Endpoint is "host:port" or a URL ("http://127.0.0.1:9000"); an https
	// URL turns TLS on.
	Endpoint  string
	AccessKey string
	SecretKey string
	// Region; MinIO's default when empty. Setting it spares a location lookup.
	Region string
	// Transport is used when set (tests).
	Transport http.RoundTripper
}

// What went wrong with MinIO, for the layer that knows the user's command
// to say what to do next (errors.Is).
var (
	ErrNoEndpoint         = errors.New("no MinIO endpoint given")
	ErrNoCredentials      = errors.New("no MinIO credentials")
	ErrUnreachable        = errors.New("MinIO did not answer")
	ErrCredentialsRefused = errors.New("MinIO refused the credentials")
	// ErrRootRefused: MinIO refused the lab's root credentials, so it runs
	// with others.
	ErrRootRefused = errors.New("MinIO refused the root credentials")
	// ErrNoAdmin: the admin client lacks an endpoint or root credentials.
	ErrNoAdmin = errors.New("MinIO admin client: no endpoint or root credentials")
)

// Client wraps a minio-go client.
type Client struct {
	mc       *minio.Client
	endpoint string
}

// New checks the configuration and returns a client; it does not connect.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		return nil, ErrNoEndpoint
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, clierr.Mark(fmt.Errorf("no MinIO credentials for %s", cfg.Endpoint), ErrNoCredentials)
	}
	host, secure, err := hostOf(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	mc, err := minio.New(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       secure,
		Region:       region,
		BucketLookup: minio.BucketLookupPath, // MinIO behind a plain host:port
		Transport:    cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("MinIO client for %s: %w", cfg.Endpoint, err)
	}
	return &Client{mc: mc, endpoint: cfg.Endpoint}, nil
}

// hostOf splits an endpoint ("host:port" or a URL) into the host:port the
// clients take and whether it uses TLS.
func hostOf(endpoint string) (string, bool, error) {
	if !strings.Contains(endpoint, "://") {
		return endpoint, false, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", false, clierr.Hintf("pass --minio-endpoint like http://127.0.0.1:9000", "MinIO endpoint %q is not a URL", endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// Endpoint is the address in use, for messages.
func (c *Client) Endpoint() string { return c.endpoint }

func (c *Client) wrap(what string, err error) error {
	var er minio.ErrorResponse
	answered := errors.As(err, &er)
	return describe(what, c.endpoint, err, answered, er.Code, "credentials", ErrCredentialsRefused)
}

// describe names the MinIO operation and endpoint in err. An answer refusing
// the credentials (whose: "credentials", "root credentials") is refused;
// no answer at all is ErrUnreachable.
func describe(what, endpoint string, err error, answered bool, code, whose string, refused error) error {
	if !answered {
		return clierr.Mark(fmt.Errorf("%s on MinIO %s: %w", what, endpoint, err), ErrUnreachable)
	}
	switch code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied":
		return clierr.Mark(fmt.Errorf("%s on MinIO %s: %s refused (%s): %w", what, endpoint, whose, code, err), refused)
	}
	return fmt.Errorf("%s on MinIO %s: %w", what, endpoint, err)
}

// EnsureBucket creates bucket unless it exists; it reports whether it did.
// Re-running is harmless (an interrupted `up` converges).
func (c *Client) EnsureBucket(ctx context.Context, bucket string) (bool, error) {
	ok, err := c.mc.BucketExists(ctx, bucket)
	if err != nil {
		return false, c.wrap("check bucket "+bucket, err)
	}
	if ok {
		return false, nil
	}
	if err := c.mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "BucketAlreadyOwnedByYou" || er.Code == "BucketAlreadyExists") {
			return false, nil // created concurrently
		}
		return false, c.wrap("create bucket "+bucket, err)
	}
	return true, nil
}

// Checkpoint is one Ray Train checkpoint directory in the bucket.
type Checkpoint struct {
	Bucket       string    `json:"bucket"`
	Run          string    `json:"run"`  // path before the checkpoint dir, e.g. "fault-1" or "TorchTrainer_…/TorchTrainer_…_00000_0_…"
	Name         string    `json:"name"` // checkpoint_2026-11-21_20-00-00.123456 (V2) or checkpoint_000004 (V1)
	Path         string    `json:"path"` // Run/Name, the key prefix without the bucket
	Files        int       `json:"files"`
	Bytes        int64     `json:"bytes"`
	LastModified time.Time `json:"last_modified"` // newest object in it
}

// URI is s3://bucket/path, as Ray names the checkpoint.
func (c Checkpoint) URI() string { return "s3://" + c.Bucket + "/" + c.Path }

// ListCheckpoints lists the checkpoint directories under prefix (a run name,
// or "" for all), oldest first by last write. A directory whose name starts
// with "checkpoint_" is a checkpoint in both Train V2 and V1 layouts.
func (c *Client) ListCheckpoints(ctx context.Context, bucket, prefix string) ([]Checkpoint, error) {
	byPath := map[string]*Checkpoint{}
	for obj := range c.mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, c.wrap("list "+bucket+"/"+prefix, obj.Err)
		}
		parts := strings.Split(obj.Key, "/")
		for i := 0; i < len(parts)-1; i++ { // the last part is the file itself
			if !strings.HasPrefix(parts[i], "checkpoint_") {
				continue
			}
			p := strings.Join(parts[:i+1], "/")
			cp, ok := byPath[p]
			if !ok {
				cp = &Checkpoint{Bucket: bucket, Run: path.Dir(p), Name: parts[i], Path: p}
				if cp.Run == "." {
					cp.Run = ""
				}
				byPath[p] = cp
			}
			cp.Files++
			cp.Bytes += obj.Size
			if obj.LastModified.After(cp.LastModified) {
				cp.LastModified = obj.LastModified
			}
			break
		}
	}
	out := make([]Checkpoint, 0, len(byPath))
	for _, cp := range byPath {
		out = append(out, *cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastModified.Equal(out[j].LastModified) {
			return out[i].LastModified.Before(out[j].LastModified)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// Latest returns the most recently written checkpoint under prefix.
func (c *Client) Latest(ctx context.Context, bucket, prefix string) (Checkpoint, bool, error) {
	cps, err := c.ListCheckpoints(ctx, bucket, prefix)
	if err != nil || len(cps) == 0 {
		return Checkpoint{}, false, err
	}
	return cps[len(cps)-1], true, nil
}

// Exists says whether bucket holds an object at key.
func (c *Client) Exists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := c.mc.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if r := minio.ToErrorResponse(err); r.Code == "NoSuchKey" || r.StatusCode == 404 {
		return false, nil
	}
	return false, c.wrap("stat "+bucket+"/"+key, err)
}
