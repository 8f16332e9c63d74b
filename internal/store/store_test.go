package store_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/store"
)

// s3Double answers the three S3 calls the store makes (HeadBucket,
// CreateBucket, ListObjectsV2) the way MinIO does, path-style. It checks that
// requests are signed with the expected access key. A real MinIO for CI is
// the lead engineer's; this double keeps the unit tests hermetic.
type s3Double struct {
	mu      sync.Mutex
	key     string
	buckets map[string]map[string]obj
	calls   []string
}

type obj struct {
	size int64
	mod  time.Time
}

func newS3(t *testing.T) (*s3Double, *httptest.Server) {
	d := &s3Double{key: "AKIDLAB", buckets: map[string]map[string]obj{}}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

func (d *s3Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, r.Method+" "+r.URL.Path)
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+d.key+"/") {
		s3Error(w, r, http.StatusForbidden, "InvalidAccessKeyId", "The Access Key Id you provided does not exist in our records.")
		return
	}
	bucket := strings.Trim(r.URL.Path, "/")
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

func client(t *testing.T, srv *httptest.Server, key string) *store.Client {
	c, err := store.New(store.Config{Endpoint: srv.URL, AccessKey: key, SecretKey: "secret"})
	require.NoError(t, err)
	return c
}

func TestEnsureBucketIsIdempotent(t *testing.T) {
	d, srv := newS3(t)
	c := client(t, srv, "AKIDLAB")
	ctx := context.Background()
	created, err := c.EnsureBucket(ctx, "ray")
	require.NoError(t, err)
	assert.True(t, created)
	created, err = c.EnsureBucket(ctx, "ray")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, []string{"HEAD /ray/", "PUT /ray/", "HEAD /ray/"}, d.calls)
}

func TestWrongCredentialsSayWhatToFix(t *testing.T) {
	_, srv := newS3(t)
	c := client(t, srv, "WRONG")
	_, err := c.ListCheckpoints(context.Background(), "ray", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "credentials refused")
	assert.Contains(t, clierr.Hint(err), "AWS_ACCESS_KEY_ID")
}

func TestNewRejectsMissingConfig(t *testing.T) {
	_, err := store.New(store.Config{AccessKey: "a", SecretKey: "b"})
	require.Error(t, err)
	_, err = store.New(store.Config{Endpoint: "localhost:9000"})
	require.Error(t, err)
	assert.Contains(t, clierr.Hint(err), "AWS_SECRET_ACCESS_KEY")
}

func TestListCheckpointsBothLayouts(t *testing.T) {
	d, srv := newS3(t)
	t0 := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	d.buckets["ray"] = map[string]obj{
		// Train V2 layout
		"fault-1/.validate_storage_marker":                                 {0, t0},
		"fault-1/checkpoint_manager_snapshot.json":                         {10, t0.Add(30 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-10.000001/checkpoint.ckpt":    {100, t0.Add(10 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-20.000001/checkpoint.ckpt":    {100, t0.Add(20 * time.Second)},
		"fault-1/checkpoint_2026-11-21_20-00-20.000001/extra/metrics.json": {5, t0.Add(21 * time.Second)},
		// Train V1 / Tune layout
		"TorchTrainer_x/TorchTrainer_a_00000_0_x/checkpoint_000000/checkpoint.ckpt": {7, t0.Add(time.Second)},
		"TorchTrainer_x/TorchTrainer_a_00000_0_x/result.json":                       {7, t0.Add(time.Second)},
	}
	c := client(t, srv, "AKIDLAB")
	ctx := context.Background()

	cps, err := c.ListCheckpoints(ctx, "ray", "fault-1/")
	require.NoError(t, err)
	require.Len(t, cps, 2)
	assert.Equal(t, "checkpoint_2026-11-21_20-00-10.000001", cps[0].Name)
	assert.Equal(t, "fault-1", cps[1].Run)
	assert.Equal(t, 2, cps[1].Files)
	assert.Equal(t, int64(105), cps[1].Bytes)
	assert.Equal(t, "s3://ray/fault-1/checkpoint_2026-11-21_20-00-20.000001", cps[1].URI())

	latest, ok, err := c.Latest(ctx, "ray", "")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "fault-1/checkpoint_2026-11-21_20-00-20.000001", latest.Path)

	all, err := c.ListCheckpoints(ctx, "ray", "TorchTrainer_x/")
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "checkpoint_000000", all[0].Name)
	assert.Equal(t, "TorchTrainer_x/TorchTrainer_a_00000_0_x", all[0].Run)

	_, ok, err = c.Latest(ctx, "ray", "nothing-here/")
	require.NoError(t, err)
	assert.False(t, ok)

	_, err = c.ListCheckpoints(ctx, "missing", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing")
}
