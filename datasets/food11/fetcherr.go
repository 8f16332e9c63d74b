package food11

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
)

// A download fails in one of two ways: for now (a dropped connection, a
// stall, a busy server), worth the retries and a later run, or for good (a
// bad URL, a redirect loop, a page instead of the zip, a 404), which no
// retry and no later run mends. Only the first kind says "run it again",
// and only a partial file the server can resume says "to resume".

// errBadRedirect is a redirect the download does not follow.
var errBadRedirect = errors.New("bad redirect")

// maxRedirects is how many redirects a download follows, as net/http's
// default client.
const maxRedirects = 10

// fetchState is what the attempts of one download learnt.
type fetchState struct {
	permanent bool // the last attempt's error is one no retry mends
	ranges    bool // the server resumes: it offered byte ranges or answered one
}

// sawRanges notes whether resp says the server resumes downloads.
func (st *fetchState) sawRanges(resp *http.Response, asked bool) {
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		st.ranges = true
	case asked && resp.StatusCode == http.StatusOK:
		st.ranges = false // it sent the whole file again
	case resp.Header.Get("Accept-Ranges") == "bytes":
		st.ranges = true
	case resp.Header.Get("Accept-Ranges") == "none":
		st.ranges = false
	}
}

// failed is the error of a download whose attempts ended with err, with the
// next step it can honestly name: to resume (a partial file the server can
// resume), to retry (a failure for now), or another source (for good).
func (st *fetchState) failed(ctx context.Context, err error, o FetchOptions, part, step string, attempt int, again []string) error {
	var kept int64
	if fi, serr := os.Stat(part); serr == nil {
		kept = fi.Size()
	}
	// A cancelled attempt is not retried, but the download is no lost cause.
	resume := (ctx.Err() != nil || !st.permanent) && kept > 0 && st.ranges
	if ctx.Err() != nil {
		what := "nothing was kept"
		switch {
		case resume:
			what = fmt.Sprintf("the partial file %s (%s) is kept and resumed next time", part, progress.Bytes(kept))
		case kept > 0:
			what = fmt.Sprintf("the partial file %s is kept, but the server did not offer to resume: the next run starts over", part)
		}
		err = fmt.Errorf("download of %s interrupted (%w); %s", o.URL, ctx.Err(), what)
	} else {
		err = fmt.Errorf("download %s failed after %d attempt%s: %w", o.URL, attempt, plural(attempt, "", "s"), err)
	}
	progress.Failed(o.Reporter, step, err)
	other := [][]string{withSource(again, "--url", "URL"), withSource(again, "--zip", "PATH")}
	switch {
	case st.permanent && ctx.Err() == nil:
		return clierr.WithNext(err, clierr.Next{Text: "check the URL; or load from another mirror with '%s' or from a local copy with '%s'", Commands: other})
	case resume:
		return clierr.WithNext(err, clierr.Next{Text: "run '%s' again to resume (" + progress.Bytes(kept) + " kept), or load from another mirror with '%s' or from a local copy with '%s'",
			Commands: append([][]string{again}, other...)})
	}
	return clierr.WithNext(err, clierr.Next{Text: "run '%s' again to retry (the download starts over), or load from another mirror with '%s' or from a local copy with '%s'",
		Commands: append([][]string{again}, other...)})
}

// checkURL refuses, before any request, a URL that is not http(s): no
// retry reaches an ftp:// or a relative URL.
func checkURL(raw string, again []string) error {
	u, err := url.Parse(raw)
	why := ""
	switch {
	case err != nil:
		why = err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		why = fmt.Sprintf("unsupported scheme %q: mltrain downloads over http or https", u.Scheme)
	case u.Host == "":
		why = "no host"
	default:
		return nil
	}
	return clierr.WithNext(fmt.Errorf("download URL %q: %s", raw, why),
		clierr.Next{Text: "pass an http(s) URL, '%s', or load from a local copy with '%s'",
			Commands: [][]string{withSource(again, "--url", "https://HOST/Food-11.zip"), withSource(again, "--zip", "PATH")}})
}

// redirectChecked is c following redirects as before, except that a hop to
// a scheme other than http(s) or past maxRedirects ends the download for
// good instead of being retried.
func redirectChecked(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	cc := *c
	then := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return fmt.Errorf("%w to %s: mltrain downloads over http or https", errBadRedirect, req.URL.Redacted())
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: stopped after %d redirects, the last to %s (a redirect loop?)", errBadRedirect, len(via), req.URL.Redacted())
		}
		if then != nil {
			return then(req, via)
		}
		return nil
	}
	return &cc
}

// permanentTransportErr is a request error no retry mends: a redirect the
// download refused, a certificate the client does not trust.
func permanentTransportErr(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		inv x509.CertificateInvalidError
	)
	return errors.Is(err, errBadRedirect) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &inv)
}

// htmlError is a response that is a web page, not the zip.
func htmlError(u string) error {
	return fmt.Errorf("GET %s returned an HTML page, not a zip (a login or expired share link?)", u)
}

// isHTML reports whether a body that starts with head is a web page.
func isHTML(head []byte) bool {
	return strings.HasPrefix(http.DetectContentType(head), "text/html")
}
