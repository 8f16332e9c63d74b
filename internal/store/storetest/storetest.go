// Package storetest is an in-process stand-in for the S3 calls internal/store
// makes (HeadBucket, CreateBucket, DeleteBucket, ListObjectsV2, a bucket's
// own policy: get, put, delete; HEAD, PUT and DELETE of an object) and the
// admin calls of Admin.EnsureBucketUser (info-canned-policy,
// add-canned-policy, user-info, add-user, policy attach and detach, with
// madmin's encrypted bodies), answering the way MinIO does, path-style:
// a user other than root may do only the actions its attached policies
// allow on the resources they name, an unsigned request only what the
// bucket's own policy grants anyone, and either is refused (AccessDenied)
// before a missing bucket is reported.
// The lab's real-engine tests run the real MinIO; this keeps unit tests
// hermetic.
package storetest

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	// bucketPolicies are the buckets' own policies (anonymous access).
	bucketPolicies map[string][]byte
	users          map[string]*user
	writes         int // admin calls that changed something
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
	d := &Server{key: AccessKey, buckets: map[string]map[string]obj{}, policies: map[string]policy{}, bucketPolicies: map[string][]byte{}, users: map[string]*user{}}
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

func (d *Server) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, r.Method+" "+r.URL.Path)
	key := signer(r)
	u, isUser := d.users[key]
	anonymous := r.Header.Get("Authorization") == ""
	if key != d.key && !isUser && !anonymous {
		s3Error(w, r, http.StatusForbidden, "InvalidAccessKeyId", "The Access Key Id you provided does not exist in our records.")
		return
	}
	if strings.HasPrefix(r.URL.Path, "/minio/admin/v3/") {
		if key != d.key {
			s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied.")
			return
		}
		d.admin(w, r)
		return
	}
	q := parse(r)
	if q.action == "" {
		s3Error(w, r, http.StatusNotImplemented, "NotImplemented", "the double does not answer "+r.Method+" "+r.URL.String())
		return
	}
	// MinIO checks the policy before it looks for the bucket.
	if isUser && !d.userMay(u, q) || anonymous && !d.anyoneMay(q) {
		s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied.")
		return
	}
	bucket := q.bucket
	if _, ok := d.buckets[bucket]; !ok && q.action != "s3:CreateBucket" {
		s3Error(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	switch {
	case strings.HasSuffix(q.action, "BucketPolicy"):
		d.servePolicy(w, r, bucket)
		return
	case q.key != "":
		d.serveObject(w, r, q)
		return
	}
	objs, exists := d.buckets[bucket]
	switch r.Method {
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		if exists {
			s3Error(w, r, http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.")
			return
		}
		d.buckets[bucket] = map[string]obj{}
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		if len(objs) > 0 {
			s3Error(w, r, http.StatusConflict, "BucketNotEmpty", "The bucket you tried to delete is not empty")
			return
		}
		delete(d.buckets, bucket)
		delete(d.bucketPolicies, bucket)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
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

// serveObject answers HEAD, PUT and DELETE of one object (its size and
// time only: contents are never kept).
func (d *Server) serveObject(w http.ResponseWriter, r *http.Request, q request) {
	o, ok := d.buckets[q.bucket][q.key]
	switch r.Method {
	case http.MethodHead:
		if !ok {
			s3Error(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(o.size))
		w.Header().Set("Last-Modified", o.mod.UTC().Format(http.TimeFormat))
		w.Header().Set("ETag", `"e"`)
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		n, _ := io.Copy(io.Discard, r.Body)
		d.buckets[q.bucket][q.key] = obj{n, time.Now()}
		w.Header().Set("ETag", `"e"`)
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		delete(d.buckets[q.bucket], q.key)
		w.WriteHeader(http.StatusNoContent)
	}
}

func s3Error(w http.ResponseWriter, r *http.Request, code int, s3code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>1</RequestId></Error>`, s3code, msg, r.URL.Path)
	}
}
