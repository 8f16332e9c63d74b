package food11

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
)

// fileServer serves body with Range support; handle, when set, may take over
// a request by number (1-based) and returns true when it did.
type fileServer struct {
	body   []byte
	mu     sync.Mutex
	ranges []string // Range header of each request ("" for none)
	handle func(n int, w http.ResponseWriter, r *http.Request) bool
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	n := len(s.ranges)
	s.mu.Unlock()
	if s.handle != nil && s.handle(n, w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	http.ServeContent(w, r, "food11.zip", time.Unix(0, 0), bytes.NewReader(s.body))
}

func (s *fileServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func payload(n int) ([]byte, string) {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/251)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

func fastOpts(url, dir string) FetchOptions {
	return FetchOptions{URL: url, CacheDir: dir, StallTimeout: 300 * time.Millisecond, MaxTries: 4, Backoff: 10 * time.Millisecond}
}

func TestFetchDownloadsReportsDigestAndCaches(t *testing.T) {
	body, sum := payload(3 << 20)
	fs := &fileServer{body: body}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	dir := t.TempDir()
	var rec progress.Recorder
	o := fastOpts(srv.URL+"/food11.zip", dir)
	o.Reporter = &rec
	f, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	assert.Equal(t, int64(len(body)), f.Size)
	assert.False(t, f.FromCache)
	got, err := os.ReadFile(f.Path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(body, got))
	step := "download " + o.URL
	assert.True(t, rec.Has(step, progress.Done))
	var sawBytes bool
	for _, e := range rec.Events() {
		if e.Step == step && e.Kind == progress.Update && e.Unit == "bytes" && e.Total == int64(len(body)) {
			sawBytes = true
		}
	}
	assert.True(t, sawBytes, "progress reports bytes against the total")

	// Second time: from the cache, no request at all.
	f2, err := Fetch(context.Background(), fastOpts(srv.URL+"/food11.zip", dir))
	require.NoError(t, err)
	assert.True(t, f2.FromCache)
	assert.Equal(t, sum, f2.SHA256)
	assert.Len(t, fs.requests(), 1)

	// A pin that the cached file does not match downloads again, then fails.
	o = fastOpts(srv.URL+"/food11.zip", dir)
	o.SHA256 = strings.Repeat("ab", 32)
	_, err = Fetch(context.Background(), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--sha256 pins")
	assert.Contains(t, err.Error(), sum, "the actual digest is shown")
	assert.Len(t, fs.requests(), 2)
}

// sendPart announces the whole body and sends only its first cut bytes;
// the caller then drops or stalls the connection.
func sendPart(w http.ResponseWriter, body []byte, cut int) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body[:cut])
	w.(http.Flusher).Flush()
}

func TestFetchResumesWithRange(t *testing.T) {
	body, sum := payload(2 << 20)
	cut := 700_000
	fs := &fileServer{body: body}
	fs.handle = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n != 1 {
			return false
		}
		sendPart(w, body, cut) // then drop the connection
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	f, err := Fetch(context.Background(), fastOpts(srv.URL+"/z.zip", t.TempDir()))
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	reqs := fs.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "", reqs[0])
	assert.Equal(t, "bytes="+strconv.Itoa(cut)+"-", reqs[1], "the second attempt resumes where the first stopped")
}

func TestFetchResumesAcrossRuns(t *testing.T) {
	body, sum := payload(1 << 20)
	fs := &fileServer{body: body}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	dir := t.TempDir()
	o := fastOpts(srv.URL+"/z.zip", dir)
	// An earlier run left a partial file in the cache.
	f0, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	require.NoError(t, os.Remove(f0.Path+".sha256"))
	require.NoError(t, os.Rename(f0.Path, f0.Path+".part"))
	require.NoError(t, os.Truncate(f0.Path+".part", 4096))

	f, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	reqs := fs.requests()
	assert.Equal(t, "bytes=4096-", reqs[len(reqs)-1])
}

func TestFetch404IsNotRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Fetch(context.Background(), fastOpts(srv.URL+"/gone.zip", t.TempDir()))
	require.Error(t, err)
	var he *HTTPError
	require.True(t, errors.As(err, &he), err)
	assert.Equal(t, 404, he.Code)
	assert.Contains(t, err.Error(), "/gone.zip")
	assert.Contains(t, err.Error(), "after 1 attempt:")
	assert.Contains(t, nextOf(t, err), "check the URL")
}

func TestFetchRetries5xx(t *testing.T) {
	body, sum := payload(10_000)
	fs := &fileServer{body: body}
	fs.handle = func(n int, w http.ResponseWriter, _ *http.Request) bool {
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	f, err := Fetch(context.Background(), fastOpts(srv.URL+"/z.zip", t.TempDir()))
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	assert.Len(t, fs.requests(), 3)
}

func TestFetchStallIsDetectedAndResumed(t *testing.T) {
	body, sum := payload(1 << 20)
	cut := 100_000
	fs := &fileServer{body: body}
	fs.handle = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n != 1 {
			return false
		}
		sendPart(w, body, cut)
		<-r.Context().Done() // then nothing: a stalled connection
		return true
	}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var rec progress.Recorder
	o := fastOpts(srv.URL+"/z.zip", t.TempDir())
	o.Reporter = &rec
	start := time.Now()
	f, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	assert.Less(t, time.Since(start), 10*time.Second)
	reqs := fs.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "bytes="+strconv.Itoa(cut)+"-", reqs[1])
	var said bool
	for _, e := range rec.Events() {
		if e.Kind == progress.Update && bytes.Contains([]byte(e.Message), []byte("download stalled")) {
			said = true
		}
	}
	assert.True(t, said, "the stall is reported before the retry")
}

func TestFetchGivesUpOnPersistentStall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	o := fastOpts(srv.URL+"/z.zip", t.TempDir())
	o.MaxTries = 2
	_, err := Fetch(context.Background(), o)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrStalled)
	assert.Contains(t, err.Error(), "after 2 attempts")
}

func TestFetchRejectsHTMLAndBadPin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html>log in</html>"))
	}))
	defer srv.Close()
	_, err := Fetch(context.Background(), fastOpts(srv.URL+"/z.zip", t.TempDir()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTML page, not a zip")

	o := fastOpts(srv.URL+"/z.zip", t.TempDir())
	o.SHA256 = "1234"
	_, err = Fetch(context.Background(), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--sha256")
}

func TestFetchCompleteFileWithoutDigestIsCheckedNotRedownloaded(t *testing.T) {
	body, sum := payload(1 << 20)
	fs := &fileServer{body: body}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	o := fastOpts(srv.URL+"/z.zip", t.TempDir())
	f0, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	// Killed after the rename, before the digest file was written.
	require.NoError(t, os.Remove(f0.Path+".sha256"))
	f, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, sum, f.SHA256)
	reqs := fs.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "bytes="+strconv.Itoa(len(body))+"-", reqs[1], "only asks whether there is more")
}
