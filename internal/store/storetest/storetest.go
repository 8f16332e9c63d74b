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
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
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

// User returns a user's secret and attached policies (ok false: no such user).
func (d *Server) User(accessKey string) (secret string, policies []string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[accessKey]
	if !ok {
		return "", nil, false
	}
	return u.secret, append([]string(nil), u.policies...), true
}

// PolicyBuckets returns the buckets policy name allows (ok false: no such policy).
func (d *Server) PolicyBuckets(name string) ([]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.policies[name]
	return append([]string(nil), p.buckets...), ok
}

// AdminWrites counts the admin calls that created or changed something.
func (d *Server) AdminWrites() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

// AttachPolicy attaches a policy directly, as someone with mc would.
func (d *Server) AttachPolicy(user, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if u, ok := d.users[user]; ok {
		u.policies = append(u.policies, name)
	}
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

// admin answers madmin's calls as MinIO does: policies in plain JSON, user
// and attach requests encrypted with the root secret, attaching a policy a
// user already has refused with XMinioAdminPolicyChangeAlreadyApplied.
func (d *Server) admin(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		adminError(w, http.StatusBadRequest, "XMinioInvalidRequestBody", err.Error())
		return
	}
	decrypt := func(v any) bool {
		plain, err := madmin.DecryptData(SecretKey, bytes.NewReader(body))
		if err == nil {
			err = json.Unmarshal(plain, v)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, "XMinioAdminConfigBadJSON", err.Error())
			return false
		}
		return true
	}
	switch op := strings.TrimPrefix(r.URL.Path, "/minio/admin/v3/"); {
	case op == "info-canned-policy" && r.Method == http.MethodGet:
		name := r.URL.Query().Get("name")
		p, ok := d.policies[name]
		if !ok {
			adminError(w, http.StatusNotFound, "XMinioAdminNoSuchPolicy", "The canned policy does not exist.")
			return
		}
		// MinIO answers with the policy re-indented, not as it was given.
		var v any
		_ = json.Unmarshal(p.raw, &v)
		pretty, _ := json.MarshalIndent(v, "", " ")
		_ = json.NewEncoder(w).Encode(madmin.PolicyInfo{PolicyName: name, Policy: pretty})
	case op == "user-info" && r.Method == http.MethodGet:
		u, ok := d.users[r.URL.Query().Get("accessKey")]
		if !ok {
			adminError(w, http.StatusNotFound, "XMinioAdminNoSuchUser", "The specified user does not exist.")
			return
		}
		_ = json.NewEncoder(w).Encode(madmin.UserInfo{PolicyName: strings.Join(u.policies, ","), Status: madmin.AccountEnabled})
	case op == "idp/builtin/policy/detach" && r.Method == http.MethodPost:
		var req madmin.PolicyAssociationReq
		if !decrypt(&req) {
			return
		}
		u, ok := d.users[req.User]
		if !ok {
			adminError(w, http.StatusNotFound, "XMinioAdminNoSuchUser", "The specified user does not exist.")
			return
		}
		u.policies = slices.DeleteFunc(u.policies, func(p string) bool { return slices.Contains(req.Policies, p) })
		d.writes++
		b, _ := json.Marshal(madmin.PolicyAssociationResp{PoliciesDetached: req.Policies, UpdatedAt: time.Now()})
		enc, _ := madmin.EncryptData(SecretKey, b)
		_, _ = w.Write(enc)
	case op == "add-canned-policy" && r.Method == http.MethodPut:
		var p struct {
			Statement []struct {
				Effect   string
				Resource []string
			}
		}
		if err := json.Unmarshal(body, &p); err != nil || len(p.Statement) == 0 {
			adminError(w, http.StatusBadRequest, "XMinioMalformedPolicy", "invalid policy")
			return
		}
		var buckets []string
		for _, st := range p.Statement {
			for _, res := range st.Resource {
				b := strings.TrimSuffix(strings.TrimPrefix(res, "arn:aws:s3:::"), "/*")
				if st.Effect == "Allow" && !slices.Contains(buckets, b) {
					buckets = append(buckets, b)
				}
			}
		}
		d.policies[r.URL.Query().Get("name")] = policy{raw: body, buckets: buckets}
		d.writes++
	case op == "add-user" && r.Method == http.MethodPut:
		var req madmin.AddOrUpdateUserReq
		if !decrypt(&req) {
			return
		}
		k := r.URL.Query().Get("accessKey")
		if k == d.key || len(k) < 3 || len(k) > 20 || len(req.SecretKey) < 8 || len(req.SecretKey) > 40 {
			adminError(w, http.StatusBadRequest, "XMinioAdminInvalidArgument", "invalid access or secret key")
			return
		}
		if u, ok := d.users[k]; ok {
			u.secret = req.SecretKey
		} else {
			d.users[k] = &user{secret: req.SecretKey}
		}
		d.writes++
	case op == "idp/builtin/policy/attach" && r.Method == http.MethodPost:
		var req madmin.PolicyAssociationReq
		if !decrypt(&req) {
			return
		}
		u, ok := d.users[req.User]
		if !ok {
			adminError(w, http.StatusNotFound, "XMinioAdminNoSuchUser", "The specified user does not exist.")
			return
		}
		var added []string
		for _, p := range req.Policies {
			if _, ok := d.policies[p]; !ok {
				adminError(w, http.StatusNotFound, "XMinioAdminNoSuchPolicy", "The canned policy does not exist.")
				return
			}
			if !slices.Contains(u.policies, p) {
				added = append(added, p)
			}
		}
		if len(added) == 0 {
			adminError(w, http.StatusBadRequest, "XMinioAdminPolicyChangeAlreadyApplied", "The specified policy change is already in effect.")
			return
		}
		u.policies = append(u.policies, added...)
		d.writes++
		b, _ := json.Marshal(madmin.PolicyAssociationResp{PoliciesAttached: added, UpdatedAt: time.Now()})
		enc, err := madmin.EncryptData(SecretKey, b)
		if err != nil {
			adminError(w, http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		_, _ = w.Write(enc)
	default:
		adminError(w, http.StatusBadRequest, "XMinioAdminUnsupported", "the double does not answer "+r.Method+" "+r.URL.Path)
	}
}

func adminError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Code": code, "Message": msg})
}
