// Package storetest is an in-process stand-in for the S3 calls internal/store
// makes (HeadBucket, CreateBucket, ListObjectsV2) and the admin calls of
// Admin.EnsureBucketUser (info-canned-policy, add-canned-policy, user-info,
// add-user, policy attach and detach, with madmin's encrypted bodies),
// answering the way MinIO does, path-style:
// a user other than root may only touch the buckets its attached policies
// name, and is refused (AccessDenied) before a missing bucket is reported.
// The lab's real-engine tests run the real MinIO; this keeps unit tests
// hermetic.
package storetest

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/store"
)

// AccessKey and SecretKey are what the double accepts.
const (
	AccessKey = "AKIDLAB"
	SecretKey = "secret"
)

// Server is the S3 double. It checks requests are signed with AccessKey
// (root) or a user's key.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	key      string
	buckets  map[string]map[string]obj
	calls    []string
	policies map[string]policy
	users    map[string]*user
	writes   int // admin calls that changed something
}

type policy struct {
	raw     []byte
	buckets []string // the buckets its Allow statements name
}

type user struct {
	secret   string
	policies []string
}

type obj struct {
	size int64
	mod  time.Time
}

// New starts the double, closed when the test ends.
func New(t testing.TB) *Server {
	d := &Server{key: AccessKey, buckets: map[string]map[string]obj{}, policies: map[string]policy{}, users: map[string]*user{}}
	d.Server = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.Close)
	return d
}

// Client returns a store client for the double with the given access key.
func (d *Server) Client(t testing.TB, key string) *store.Client {
	c, err := store.New(store.Config{Endpoint: d.URL, AccessKey: key, SecretKey: SecretKey})
	require.NoError(t, err)
	return c
}

// MakeBucket creates a bucket directly.
func (d *Server) MakeBucket(bucket string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.buckets[bucket] == nil {
		d.buckets[bucket] = map[string]obj{}
	}
}

// Put stores an object (size and time only; contents are never read).
func (d *Server) Put(bucket, key string, size int64, mod time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.buckets[bucket] == nil {
		d.buckets[bucket] = map[string]obj{}
	}
	d.buckets[bucket][key] = obj{size, mod}
}

// Delete removes an object, as Ray's checkpoint retention does (MinIO lists
// it no more from that moment).
func (d *Server) Delete(bucket, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.buckets[bucket], key)
}

// Keys lists the objects under prefix, sorted.
func (d *Server) Keys(bucket, prefix string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k := range d.buckets[bucket] {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Calls lists "METHOD path" of every request.
func (d *Server) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// signer is the access key a request is signed with.
func signer(r *http.Request) string {
	_, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, "/")
	return key
}

// allowed says whether user may act on bucket through its policies.
func (d *Server) allowed(u *user, bucket string) bool {
	for _, p := range u.policies {
		if slices.Contains(d.policies[p].buckets, bucket) {
			return true
		}
	}
	return false
}

func (d *Server) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, r.Method+" "+r.URL.Path)
	key := signer(r)
	u, isUser := d.users[key]
	if key != d.key && !isUser {
		s3Error(w, r, http.StatusForbidden, "InvalidAccessKeyId", "The Access Key Id you provided does not exist in our records.")
		return
	}
	if strings.HasPrefix(r.URL.Path, "/minio/admin/v3/") {
		if isUser {
			s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied.")
			return
		}
		d.admin(w, r)
		return
	}
	bucket := strings.Trim(r.URL.Path, "/")
	if isUser && !d.allowed(u, bucket) {
		// MinIO checks the policy before it looks for the bucket.
		s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied.")
		return
	}
	objs, exists := d.buckets[bucket]
	switch r.Method {
	case http.MethodHead:
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		if exists {
			s3Error(w, r, http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.")
			return
		}
		d.buckets[bucket] = map[string]obj{}
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		if !exists {
			s3Error(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
			return
		}
		prefix := r.URL.Query().Get("prefix")
		type content struct {
			Key          string
			LastModified string
			Size         int64
			ETag         string
		}
		var res struct {
			XMLName     xml.Name `xml:"ListBucketResult"`
			Name        string
			Prefix      string
			KeyCount    int
			MaxKeys     int
			IsTruncated bool
			Contents    []content
		}
		res.Name, res.Prefix, res.MaxKeys = bucket, prefix, 1000
		var keys []string
		for k := range objs {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			res.Contents = append(res.Contents, content{Key: k, Size: objs[k].size, ETag: `"e"`,
				LastModified: objs[k].mod.UTC().Format("2006-01-02T15:04:05.000Z")})
		}
		res.KeyCount = len(res.Contents)
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	}
}

func s3Error(w http.ResponseWriter, r *http.Request, code int, s3code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>1</RequestId></Error>`, s3code, msg, r.URL.Path)
	}
}
