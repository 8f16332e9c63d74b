package images

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/distribution/reference"

	"github.com/mltrain/mltrain/internal/docker"
)

// TagNotFoundError is the registry's answer that it has no such tag (or
// digest) of Image, or no such repository: retrying cannot change it.
type TagNotFoundError struct {
	Image string // the repository as written, registry host included when not Docker Hub
	Tag   string // the tag, or the digest for a reference by digest
	Err   error  // the engine's error
}

func (e *TagNotFoundError) Error() string {
	// The registry's own words end the engine's message ("manifest for
	// r:t not found: manifest unknown: manifest unknown"); the rest
	// repeats the image.
	msg := e.Err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return fmt.Sprintf("%s has no tag %q in its registry (%s)", e.Image, e.Tag, msg)
}

func (e *TagNotFoundError) Unwrap() error { return e.Err }

// RegistryUnreachableError says the engine could not connect to the
// registry at all (refused, no route, timed out): nothing of it was
// pulled.
type RegistryUnreachableError struct {
	Registry string // host[:port]
	Reason   string // "connect: connection refused"
	Err      error
}

func (e *RegistryUnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the registry %s (%s)", e.Registry, e.Reason)
}

func (e *RegistryUnreachableError) Unwrap() error { return e.Err }

// prefixed drops the "pull <ref>: " the engine layer puts first, since
// every message here already names the image; the error chain is kept.
type prefixed struct {
	msg string
	err error
}

func (p *prefixed) Error() string { return p.msg }
func (p *prefixed) Unwrap() error { return p.err }

func withoutPrefix(err error, prefix string) error {
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return &prefixed{msg: strings.TrimPrefix(err.Error(), prefix), err: err}
}

// dnsError is a registry name this host cannot resolve. It is not
// transient: a host without DNS for the registry (a lab node without a
// registry) does not get it in the next seconds, so it is never retried,
// and it is said once for every image it stops.
type dnsError struct {
	err    error
	lookup string // "lookup registry-1.docker.io on 10.0.0.53:53: no such host"
	host   string // "registry-1.docker.io"
	reason string // "no such host"
}

func (e *dnsError) Error() string { return e.err.Error() }
func (e *dnsError) Unwrap() error { return e.err }

// lookupFailure is the resolver's failure as the engine reports it (Go's
// resolver, or getaddrinfo's "temporary failure in name resolution").
var lookupFailure = regexp.MustCompile(`(?i)lookup ([^\s:]+)(?: on \S+)?: (?:(?:read|dial) udp \S+: )?(no such host|server misbehaving|temporary failure in name resolution|i/o timeout)`)

// registryProblem is the registry that stopped a pull and why, in a few
// words, when a registry this host cannot resolve or reach stopped it.
func registryProblem(err error) (registry, why string, ok bool) {
	var d *dnsError
	var u *RegistryUnreachableError
	switch {
	case errors.As(err, &d):
		return d.host, "this host cannot resolve its name (" + d.lookup + ")", true
	case errors.As(err, &u):
		return u.Registry, "this host cannot connect to it (" + u.Reason + ")", true
	}
	return "", "", false
}

// classify marks errors that retrying cannot fix as permanent and rate
// limits as a longer wait; everything else (network, registry 5xx) is retried.
func classify(err error, retry Retry) error {
	if err == nil {
		return nil
	}
	if m := lookupFailure.FindStringSubmatch(err.Error()); m != nil {
		return backoff.Permanent(&dnsError{err: err, lookup: m[0], host: m[1], reason: m[2]})
	}
	if errors.As(err, new(*TagNotFoundError)) {
		return backoff.Permanent(err)
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"toomanyrequests", "too many requests", "rate limit"} {
		if strings.Contains(msg, s) {
			return &rateLimited{err: err, wait: retry.RateLimitWait}
		}
	}
	for _, s := range []string{"manifest unknown", "not found", "repository does not exist", "pull access denied",
		"unauthorized", "denied", "invalid reference format", "no matching manifest"} {
		if strings.Contains(msg, s) {
			return backoff.Permanent(err)
		}
	}
	if docker.IsNotFound(err) {
		return backoff.Permanent(err)
	}
	return err
}

// dialFailure is the engine failing to connect to a registry's address
// (not its name: lookupFailure is that).
var dialFailure = regexp.MustCompile(`dial tcp \S+?: (connect: (?:connection refused|no route to host|network is unreachable)|i/o timeout)`)

// notFound are the engine's words for a registry's 404 on a manifest: no
// such tag, or no such repository (a missing blob of an existing manifest
// is another matter: "blob unknown").
var notFound = regexp.MustCompile(`(?i)manifest unknown|name unknown|manifest for \S+ not found|repository \S+ not found`)

// typed turns the engine's error for ref into a TagNotFoundError or a
// RegistryUnreachableError when it is one, naming the image and tag or
// the registry; any other error is returned as it is.
func typed(ref string, err error) error {
	if err == nil {
		return nil
	}
	named, perr := reference.ParseNormalizedNamed(ref)
	if perr != nil {
		return err
	}
	msg := err.Error()
	if m := dialFailure.FindStringSubmatch(msg); m != nil && lookupFailure.FindString(msg) == "" {
		return &RegistryUnreachableError{Registry: reference.Domain(named), Reason: m[1], Err: err}
	}
	if notFound.MatchString(msg) {
		tag := "latest"
		if t, ok := named.(reference.Tagged); ok {
			tag = t.Tag()
		} else if d, ok := named.(reference.Digested); ok {
			tag = d.Digest().String()
		}
		return &TagNotFoundError{Image: reference.FamiliarName(named), Tag: tag, Err: err}
	}
	return err
}

// rateLimited carries the engine's error and the wait; backoff honours it
// through RetryAfterError.
type rateLimited struct {
	err  error
	wait time.Duration
}

func (e *rateLimited) Error() string { return e.err.Error() }

// As lets backoff find a RetryAfterError with our wait.
func (e *rateLimited) As(target any) bool {
	if t, ok := target.(**backoff.RetryAfterError); ok {
		*t = &backoff.RetryAfterError{Duration: e.wait}
		return true
	}
	return false
}
