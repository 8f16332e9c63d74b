package food11

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
)

// FetchOptions says what to download and where to keep it.
type FetchOptions struct {
	URL      string // DefaultURL when empty
	CacheDir string // where the zip is kept between runs (resumed from here)
	SHA256   string // optional pin: the download must have this hex digest

	Client       *http.Client  // http.DefaultClient's transport when nil
	StallTimeout time.Duration // no byte for this long aborts the attempt; 60s when 0
	MaxTries     uint          // attempts in all; 8 when 0
	Backoff      time.Duration // first wait between attempts; 1s when 0
	Reporter     progress.Reporter

	again []string // the user's load as command words, for next steps (set by Run)
}

// Fetched is a zip in the cache.
type Fetched struct {
	Path      string `json:"path"`
	URL       string `json:"url"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	FromCache bool   `json:"from_cache"` // no byte was downloaded
}

// ErrStalled is an attempt that received nothing for StallTimeout.
var ErrStalled = errors.New("download stalled")

// HTTPError is a response that is not the file.
type HTTPError struct {
	URL    string
	Status string
	Code   int
}

func (e *HTTPError) Error() string { return fmt.Sprintf("GET %s: %s", e.URL, e.Status) }

// Fetch downloads the zip into the cache dir, resuming a partial download
// with an HTTP Range request, retrying transient failures with exponential
// backoff, and aborting an attempt that stalls. A complete download whose
// digest is recorded is reused without any request.
func Fetch(ctx context.Context, o FetchOptions) (Fetched, error) {
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = 60 * time.Second
	}
	if o.MaxTries == 0 {
		o.MaxTries = 8
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	o.SHA256 = strings.ToLower(strings.TrimSpace(o.SHA256))
	again := againOf(o.again, "--url", o.URL)
	if o.SHA256 != "" && !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(o.SHA256) {
		return Fetched{}, clierr.Hintf("pass the zip's SHA-256 as 64 hex digits, e.g. from 'sha256sum Food-11.zip'", "--sha256 %q is not a SHA-256 digest", o.SHA256)
	}
	if err := checkURL(o.URL, again); err != nil {
		return Fetched{}, err
	}
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return Fetched{}, fmt.Errorf("download cache %s: %w", o.CacheDir, err)
	}
	sum := sha256.Sum256([]byte(o.URL))
	final := filepath.Join(o.CacheDir, "food11-"+hex.EncodeToString(sum[:6])+".zip")
	part, digestFile := final+".part", final+".sha256"
	out := Fetched{Path: final, URL: o.URL}

	cached := "" // the digest of a complete download kept in the cache, which this one must not cost
	if d, size, ok := readDigestFile(digestFile, final); ok {
		if o.SHA256 == "" || o.SHA256 == d {
			out.SHA256, out.Size, out.FromCache = d, size, true
			progress.Note(o.Reporter, fmt.Sprintf("using the cached download %s", final))
			return out, nil
		}
		cached = d
		progress.Note(o.Reporter, fmt.Sprintf("cached %s has sha256 %s, not the pinned %s: downloading again beside it", final, short(d), short(o.SHA256)))
	} else if _, err := os.Stat(final); err == nil {
		// Killed between the rename and the digest file: check it by resuming.
		if _, err := os.Stat(part); os.IsNotExist(err) {
			_ = os.Rename(final, part)
		}
	}

	step := "download " + o.URL
	progress.Begin(o.Reporter, step, "")
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = o.Backoff
	b.MaxInterval = 30 * o.Backoff
	o.Client = redirectChecked(o.Client)
	var st fetchState
	attempt := 0
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		attempt++
		err := fetchOnce(ctx, o, part, step, &st)
		var perm *backoff.PermanentError
		st.permanent = errors.As(err, &perm)
		return struct{}{}, err
	}, backoff.WithBackOff(b), backoff.WithMaxTries(o.MaxTries), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, wait time.Duration) {
			progress.Say(o.Reporter, step, fmt.Sprintf("attempt %d failed (%v); retrying in %s", attempt, err, wait.Round(100*time.Millisecond)))
		}))
	if err != nil {
		if fi, serr := os.Stat(part); serr == nil && fi.Size() == 0 {
			os.Remove(part)
		}
		return out, st.failed(ctx, err, o, part, step, attempt, again)
	}
	d, err := HashFile(ctx, part, o.Reporter)
	if err != nil {
		return out, err
	}
	fi, err := os.Stat(part)
	if err != nil {
		return out, err
	}
	if o.SHA256 != "" && d != o.SHA256 {
		os.Remove(part) // only the new download: a resumed file may be the corrupt part
		err := fmt.Errorf("download %s has sha256 %s, but --sha256 pins %s; it was deleted", o.URL, d, o.SHA256)
		if cached != "" {
			err = fmt.Errorf("%w, and the cached download %s (sha256 %s) is kept", err, final, cached)
		}
		progress.Failed(o.Reporter, step, err)
		return out, clierr.WithHint(err, "check the --sha256 value and the URL")
	}
	// The old digest goes first: a run killed before the new one is written
	// finds a zip without a digest and checks it, never trusts the old one.
	if err := os.Remove(digestFile); err != nil && !os.IsNotExist(err) {
		return out, fmt.Errorf("download cache: %w", err)
	}
	if err := os.Rename(part, final); err != nil {
		return out, fmt.Errorf("download cache: %w", err)
	}
	if err := os.WriteFile(digestFile, []byte(fmt.Sprintf("%s %d\n", d, fi.Size())), 0o644); err != nil {
		return out, fmt.Errorf("download cache: %w", err)
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%s, sha256 %s", progress.Bytes(fi.Size()), d))
	out.SHA256, out.Size = d, fi.Size()
	return out, nil
}

// readDigestFile returns the recorded digest of a complete download, if the
// zip beside it still has the recorded size.
func readDigestFile(digestFile, zipPath string) (string, int64, bool) {
	b, err := os.ReadFile(digestFile)
	if err != nil {
		return "", 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || len(f[0]) != 64 {
		return "", 0, false
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	fi, serr := os.Stat(zipPath)
	if err != nil || serr != nil || fi.Size() != size {
		return "", 0, false
	}
	return f[0], size, true
}

var contentRange = regexp.MustCompile(`^bytes (\d+)-(\d+)/(\d+|\*)$`)

// fetchOnce is one attempt: it appends to part from where it ends, and
// notes in st whether the server resumes. Errors wrapped in
// backoff.Permanent are not retried.
func fetchOnce(ctx context.Context, o FetchOptions, part, step string, st *fetchState) error {
	f, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return backoff.Permanent(fmt.Errorf("download cache: %w", err))
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return backoff.Permanent(err)
	}

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, o.URL, nil)
	if err != nil {
		return backoff.Permanent(fmt.Errorf("download URL %q: %w", o.URL, err))
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	// The stall timer covers the wait for headers too.
	w := newWatchdog(o.StallTimeout, func() { cancel(ErrStalled) })
	defer w.stop()
	resp, err := o.Client.Do(req)
	if err != nil {
		return attemptErr(actx, err)
	}
	defer resp.Body.Close()
	st.sawRanges(resp, have > 0)

	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 {
			progress.Say(o.Reporter, step, "the server does not resume downloads; starting over")
			if err := f.Truncate(0); err != nil {
				return backoff.Permanent(err)
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return backoff.Permanent(err)
			}
			have = 0
		}
		if resp.ContentLength >= 0 {
			total = resp.ContentLength
		}
	case http.StatusPartialContent:
		m := contentRange.FindStringSubmatch(resp.Header.Get("Content-Range"))
		if m == nil {
			return fmt.Errorf("GET %s: 206 with unusable Content-Range %q", o.URL, resp.Header.Get("Content-Range"))
		}
		if start, _ := strconv.ParseInt(m[1], 10, 64); start != have {
			// Not where we asked: drop the partial file and start over.
			_ = f.Truncate(0)
			return fmt.Errorf("GET %s: resumed at byte %d, asked for %d", o.URL, start, have)
		}
		if m[3] != "*" {
			total, _ = strconv.ParseInt(m[3], 10, 64)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file may already be whole (a run killed before the rename).
		if m := regexp.MustCompile(`^bytes \*/(\d+)$`).FindStringSubmatch(resp.Header.Get("Content-Range")); m != nil {
			if size, _ := strconv.ParseInt(m[1], 10, 64); size == have {
				return nil
			}
		}
		_ = f.Truncate(0)
		return fmt.Errorf("GET %s: %s for bytes %d-; starting over", o.URL, resp.Status, have)
	default:
		herr := &HTTPError{URL: o.URL, Status: resp.Status, Code: resp.StatusCode}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500 {
			return herr
		}
		return backoff.Permanent(herr) // 404 and friends: retrying cannot help
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/html" {
		return backoff.Permanent(htmlError(o.URL))
	}
	body := io.Reader(resp.Body)
	if have == 0 {
		// A page served as a file (a login, an expired share link) is no
		// zip however often it is fetched: its first bytes say so.
		br := bufio.NewReaderSize(resp.Body, 512)
		if head, _ := br.Peek(512); isHTML(head) {
			_ = f.Truncate(0)
			return backoff.Permanent(htmlError(o.URL))
		}
		body = br
	}

	buf := make([]byte, 256<<10)
	got := have
	last := time.Time{}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			w.kick()
			if _, err := f.Write(buf[:n]); err != nil {
				return backoff.Permanent(fmt.Errorf("write %s: %w", part, err))
			}
			got += int64(n)
			if time.Since(last) > 100*time.Millisecond {
				progress.Advance(o.Reporter, step, got, max(total, 0), "bytes")
				last = time.Now()
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return attemptErr(actx, rerr)
		}
	}
	progress.Advance(o.Reporter, step, got, max(total, 0), "bytes")
	if total >= 0 && got != total {
		return fmt.Errorf("GET %s: connection closed at byte %d of %d", o.URL, got, total)
	}
	return nil
}

// attemptErr names a stall as such; a cancelled run, a bad redirect and a
// certificate the client refuses are not retried.
func attemptErr(actx context.Context, err error) error {
	if cause := context.Cause(actx); errors.Is(cause, ErrStalled) {
		return fmt.Errorf("%w: no data received in time", ErrStalled)
	}
	if actx.Err() != nil || permanentTransportErr(err) {
		return backoff.Permanent(err)
	}
	return err
}

// watchdog calls fire when kick was not called for d.
type watchdog struct {
	mu sync.Mutex
	t  *time.Timer
	d  time.Duration
}

func newWatchdog(d time.Duration, fire func()) *watchdog {
	return &watchdog{t: time.AfterFunc(d, fire), d: d}
}

func (w *watchdog) kick() {
	w.mu.Lock()
	w.t.Reset(w.d)
	w.mu.Unlock()
}

func (w *watchdog) stop() { w.t.Stop() }
