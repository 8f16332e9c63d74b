package food11

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
)

// Issues 31 and 32, item 4: a download that fails for good is tried once,
// with the default retries in force (8 tries, 1 s apart and growing: tens
// of seconds), and its next step offers other sources, never a re-run.
func TestFetchPermanentErrorsAreNotRetriedNorResumed(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://"+r.Host+"/f.zip", http.StatusFound)
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		// A login page served as a file: only its bytes say it is HTML.
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte("\n  <!DOCTYPE html><html><body>Sign in to continue</body></html>"))
	})
	mux.HandleFunc("/gone", http.NotFound)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux) // a certificate this client does not trust
	defer tlsSrv.Close()
	srvURL := srv.URL
	var hits atomic.Int32
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); mux.ServeHTTP(w, r) })
	srv.Config.Handler, tlsSrv.Config.Handler = counted, counted

	cases := []struct {
		name, url, want string
		requests        int32 // that reached the handler
		attempts        bool  // false: refused before any request
	}{
		{"redirect loop", srvURL + "/loop", "stopped after 10 redirects", 10, true},
		{"redirect to ftp", srvURL + "/to-ftp", "bad redirect to ftp://", 1, true},
		{"ftp URL", "ftp://" + strings.TrimPrefix(srvURL, "http://") + "/f.zip", `unsupported scheme "ftp"`, 0, false},
		{"HTML body", srvURL + "/page", "returned an HTML page, not a zip", 1, true},
		{"404", srvURL + "/gone", "404 Not Found", 1, true},
		{"untrusted certificate", tlsSrv.URL + "/page", "certificate", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits.Store(0)
			dir := t.TempDir()
			o := FetchOptions{URL: c.url, CacheDir: dir, StallTimeout: 5 * time.Second,
				again: Options{URL: c.url, Volume: "mine"}.again()}
			start := time.Now()
			_, err := Fetch(context.Background(), o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Less(t, time.Since(start), 900*time.Millisecond, "no retry: the first wait alone is 1s")
			if c.attempts {
				assert.Contains(t, err.Error(), "after 1 attempt:")
			}
			assert.Equal(t, c.requests, hits.Load(), "requests")
			next := nextOf(t, err)
			assert.NotContains(t, next, "resume")
			assert.NotContains(t, next, "again to retry")
			assert.Contains(t, next, "'mltrain data food11 --zip PATH --volume mine'", "another source, into the user's volume")
			left, _ := filepath.Glob(filepath.Join(dir, "*"))
			assert.Empty(t, left, "nothing is kept in the cache")
		})
	}
}

// Issues 31 and 32, item 4: "again to resume" only where a partial file is
// kept and the server resumes; a failure for now without one says "retry".
func TestFetchResumeHintOnlyWhenTheServerResumes(t *testing.T) {
	body, _ := payload(200_000)
	drop := func(ranges bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ranges {
				w.Header().Set("Accept-Ranges", "bytes")
			}
			if rg := r.Header.Get("Range"); rg != "" && ranges {
				from, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
				w.Header().Set("Content-Range", "bytes "+strconv.Itoa(from)+"-"+strconv.Itoa(len(body)-1)+"/"+strconv.Itoa(len(body)))
				w.Header().Set("Content-Length", strconv.Itoa(len(body)-from))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(body[from : from+1000])
			} else {
				sendPart(w, body, 1000)
			}
			w.(http.Flusher).Flush()
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close() // then drop the connection
			}
		}
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"resumable", drop(true), "run 'mltrain data food11 --url URL0 --sha256 PIN --volume mine' again to resume (3.9 KiB kept)"},
		{"no ranges", drop(false), "run 'mltrain data food11 --url URL0 --sha256 PIN --volume mine' again to retry (the download starts over)"},
		{"busy", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
			"run 'mltrain data food11 --url URL0 --sha256 PIN --volume mine' again to retry (the download starts over)"},
	}
	pin := strings.Repeat("cd", 32)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			u := srv.URL + "/f.zip"
			o := fastOpts(u, t.TempDir())
			o.SHA256 = pin
			o.again = Options{URL: u, SHA256: pin, Volume: "mine"}.again()
			_, err := Fetch(context.Background(), o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "after 4 attempts")
			next := nextOf(t, err)
			want := strings.NewReplacer("URL0", u, "PIN", pin).Replace(c.want)
			assert.Contains(t, next, want)
			assert.Contains(t, next, "from a local copy with 'mltrain data food11 --zip PATH --volume mine'")
		})
	}
}

// Issues 31 and 32, item 4: a download stopped part-way names the re-run
// with the user's URL and volume, not the course's mirror and the food11
// volume.
func TestInterruptedDownloadNamesTheUsersURLAndVolume(t *testing.T) {
	e := newEnv(t)
	body, _ := payload(100_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Accept-Ranges", "bytes")
		sendPart(w, body, 1000)
		<-r.Context().Done()
	}))
	defer srv.Close()
	o := e.opts("")
	o.URL, o.CacheDir = srv.URL+"/mirror.zip", t.TempDir()
	// The user's Ctrl-C, once part of the file is in the cache.
	o.Reporter = reporterFunc(func(ev progress.Event) {
		if ev.Kind == progress.Update && strings.HasPrefix(ev.Step, "download ") && ev.Current > 0 {
			cancel()
		}
	})
	_, err := Run(ctx, e.eng, o)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "is kept and resumed next time")
	assert.Regexp(t, `^run '`+regexp.QuoteMeta("mltrain data food11 --url "+o.URL+" --volume "+e.volume)+`' again to resume \(\d+ B kept\)`, nextOf(t, err))
}

type reporterFunc func(progress.Event)

func (f reporterFunc) Report(ev progress.Event) { f(ev) }

// Issues 31 and 32, item 4: a --sha256 the cached, verified zip does not
// match costs only the new download; the cached zip stays, and a later run
// with its digest uses it without a request.
func TestFetchWrongPinKeepsTheVerifiedCachedZip(t *testing.T) {
	body, sum := payload(1 << 20)
	fs := &fileServer{body: body}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	dir := t.TempDir()
	o := fastOpts(srv.URL+"/food11.zip", dir)
	o.SHA256 = sum
	f, err := Fetch(context.Background(), o)
	require.NoError(t, err)

	// The server now serves another file, and the user pins a wrong digest.
	fs.body, _ = payload(1<<20 + 1)
	o.SHA256 = strings.Repeat("ab", 32)
	_, err = Fetch(context.Background(), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--sha256 pins")
	assert.Contains(t, err.Error(), "the cached download "+f.Path+" (sha256 "+sum+") is kept")
	assert.Len(t, fs.requests(), 2)
	got, err := os.ReadFile(f.Path)
	require.NoError(t, err)
	assert.Equal(t, body, got, "the verified zip is still in the cache")
	_, err = os.Stat(f.Path + ".part")
	assert.True(t, os.IsNotExist(err), "the new, refused download is gone")

	o.SHA256 = sum
	f2, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.True(t, f2.FromCache)
	assert.Equal(t, sum, f2.SHA256)
	assert.Len(t, fs.requests(), 2, "no third download")

	// A new download that matches its pin replaces the cached one.
	newBody, newSum := payload(1<<20 + 1)
	o.SHA256 = newSum
	f3, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.False(t, f3.FromCache)
	got, err = os.ReadFile(f3.Path)
	require.NoError(t, err)
	assert.Equal(t, newBody, got)
	o.SHA256 = ""
	f4, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, newSum, f4.SHA256, "the cache records the new digest")
}
