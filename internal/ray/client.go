// Package ray is a client for the Ray dashboard HTTP API (Ray 2.54): the Jobs
// API, working_dir package upload, nodes from the State API, and the pending
// resource demands the autoscaler reports. It follows the server's contract as
// written down in shared/reference/ray-api.md; response fields it does not know
// are ignored so newer Ray versions keep working.
package ray

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Ray's own environment variable names, honoured so the exercises run against
// any Ray head, not only one mltrain started.
const (
	EnvAddress = "RAY_ADDRESS"
	EnvToken   = "RAY_AUTH_TOKEN"
)

// DefaultPort is the dashboard's default HTTP port.
const DefaultPort = 8265

// Sentinel errors carried by *APIError (errors.Is works on them).
var (
	ErrAuthMissing         = errors.New("authentication token missing")
	ErrAuthInvalid         = errors.New("authentication token rejected")
	ErrNotFound            = errors.New("not found")
	ErrDuplicateSubmission = errors.New("submission id already used")
	ErrUnreachable         = errors.New("ray dashboard unreachable")
	// ErrNoAddress: no dashboard address was given or found.
	ErrNoAddress = errors.New("no Ray dashboard address: RAY_ADDRESS is empty and no lab state was found")
)

// Options configure a Client.
type Options struct {
	// Address of the dashboard: "http://host:8265", "host:8265" or "host".
	Address string
	// Token for Ray's token authentication (RAY_AUTH_MODE=token); empty sends none.
	Token string
	// TokenSource says where Token came from ("RAY_AUTH_TOKEN", "--ray-token",
	// "<state>/credentials.json"), so an auth error can say what to fix.
	TokenSource string
}

// Client talks to one Ray dashboard. It is safe for concurrent use.
type Client struct {
	base        *url.URL
	token       string
	tokenSource string
	hc          *http.Client
}

// New validates the address and returns a client. It does not contact Ray.
func New(o Options) (*Client, error) {
	base, err := ParseAddress(o.Address)
	if err != nil {
		return nil, err
	}
	// Package uploads can be up to 100 MiB over a slow link; per-call
	// contexts bound the short calls.
	hc := &http.Client{Timeout: 10 * time.Minute}
	return &Client{base: base, token: o.Token, tokenSource: o.TokenSource, hc: hc}, nil
}

// ParseAddress turns what users put in RAY_ADDRESS into the dashboard URL.
func ParseAddress(addr string) (*url.URL, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return nil, ErrNoAddress
	}
	if strings.HasPrefix(addr, "ray://") || addr == "auto" || addr == "local" {
		return nil, clierr.Hintf("set RAY_ADDRESS=http://<head>:8265 (the dashboard, as 'ray job submit' uses)",
			"Ray address %q is not a dashboard HTTP address: the Jobs API is served by the dashboard (port %d)", addr, DefaultPort)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, clierr.Hintf("set RAY_ADDRESS=http://<head>:8265", "Ray address %q is not an http(s) URL", addr)
	}
	if u.Port() == "" && u.Scheme == "http" {
		u.Host = net.JoinHostPort(u.Hostname(), fmt.Sprint(DefaultPort))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// Address is the dashboard URL in use.
func (c *Client) Address() string { return c.base.String() }

// APIError is a non-2xx answer from the dashboard.
type APIError struct {
	Method     string
	URL        string
	StatusCode int
	Body       string // text/plain from Ray: a message or a traceback
}

func (e *APIError) Error() string {
	body := strings.TrimSpace(e.Body)
	if len(body) > 600 {
		body = "…" + body[len(body)-600:] // a traceback's last lines say what failed
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.StatusCode, body)
}

// Unwrap maps the status to a sentinel so callers can use errors.Is.
func (e *APIError) Unwrap() error {
	switch {
	case e.StatusCode == http.StatusUnauthorized:
		return ErrAuthMissing
	case e.StatusCode == http.StatusForbidden:
		return ErrAuthInvalid
	case e.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case strings.Contains(e.Body, "Please use a different submission_id") || strings.Contains(e.Body, "already exists"):
		return ErrDuplicateSubmission
	}
	return nil
}

// IsNotFound reports whether err is a 404 from the dashboard.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// do sends one request and decodes a JSON answer into out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, u, ctx.Err())
		}
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, u, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.statusError(&APIError{Method: method, URL: u, StatusCode: resp.StatusCode, Body: string(data)})
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: unexpected answer (%w): %.200s", method, u, err, data)
	}
	return nil
}

// statusError says which auth failure a refusal is (ErrAuthMissing,
// ErrAuthInvalid) and where the token came from.
func (c *Client) statusError(e *APIError) error {
	src := c.tokenSource
	if src == "" {
		src = "RAY_AUTH_TOKEN, --ray-token, or the lab's credentials.json"
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		msg := fmt.Errorf("the Ray dashboard at %s requires a token and none was sent (%w; tokens come from %s): %v", c.base, ErrAuthMissing, src, e)
		if c.token != "" {
			msg = fmt.Errorf("the Ray dashboard at %s did not accept the token's form (%w; token from %s): %v", c.base, ErrAuthMissing, src, e)
		}
		return msg
	case http.StatusForbidden:
		return fmt.Errorf("the Ray dashboard at %s rejected the token from %s (%w): %v", c.base, src, ErrAuthInvalid, e)
	}
	return e
}

func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, "", out)
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request for %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	return c.do(ctx, http.MethodPost, path, body, "application/json", out)
}

// Version is GET /api/version.
type Version struct {
	Version     string `json:"version"` // Jobs API schema version, "4" on 2.54
	RayVersion  string `json:"ray_version"`
	RayCommit   string `json:"ray_commit"`
	SessionName string `json:"session_name"`
}

// Version asks the dashboard which Ray it runs; it is also the cheapest
// "is it up and does my token work" probe.
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	if err := c.getJSON(ctx, "/api/version", &v); err != nil {
		return Version{}, err
	}
	return v, nil
}
