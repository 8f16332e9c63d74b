package images

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// PullResult says which images were pulled and which were already here.
type PullResult struct {
	Present []string `json:"present"`
	Pulled  []string `json:"pulled"`
}

// UnavailableError lists the images this host does not have and could not
// (or, with --pull never, must not) pull, each with its cause; images that
// one unresolvable registry stopped are listed under it once.
type UnavailableError struct {
	Policy PullPolicy
	Images []string
	Causes map[string]error
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	if e.Policy == PullNever {
		fmt.Fprintf(&b, "%d image(s) are not on this host and --pull never forbids pulling them:", len(e.Images))
		for _, ref := range e.Images {
			fmt.Fprintf(&b, "\n  %s", ref)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "could not pull %d image(s):", len(e.Images))
	byLookup := map[string][]string{} // a DNS failure -> the images it stopped
	var lookups []string
	for _, ref := range e.Images {
		var d *dnsError
		if errors.As(e.Causes[ref], &d) {
			if byLookup[d.lookup] == nil {
				lookups = append(lookups, d.lookup)
			}
			byLookup[d.lookup] = append(byLookup[d.lookup], ref)
			continue
		}
		if c := e.Causes[ref]; c != nil {
			fmt.Fprintf(&b, "\n  %s: %v", ref, c)
		} else {
			fmt.Fprintf(&b, "\n  %s", ref)
		}
	}
	for _, l := range lookups {
		fmt.Fprintf(&b, "\n  this host cannot resolve the registry's name (%s), so it can pull none of: %s", l, strings.Join(byLookup[l], ", "))
	}
	return b.String()
}

// Pull makes refs present according to opts.Pull, pulling in parallel with
// retries. Each image is one progress step whose size is the sum of its
// layers, so a live view shows all pulls at once. Images that could not be
// had are reported together in one *UnavailableError (whose Policy says whether pulling was allowed).
func Pull(ctx context.Context, eng docker.Engine, refs []string, opts Options, r progress.Reporter) (PullResult, error) {
	var res PullResult
	policy, err := ParsePullPolicy(string(opts.Pull))
	if err != nil {
		return res, err
	}
	var need []string
	for _, ref := range refs {
		if policy == PullAlways {
			need = append(need, ref)
			continue
		}
		_, err := eng.ImageInspect(ctx, ref)
		switch {
		case err == nil:
			res.Present = append(res.Present, ref)
		case docker.IsNotFound(err):
			need = append(need, ref)
		default:
			return res, fmt.Errorf("inspect image %s: %w", ref, err)
		}
	}
	if len(need) == 0 {
		return res, nil
	}
	if policy == PullNever {
		e := &UnavailableError{Policy: PullNever, Images: need}
		return res, e
	}

	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	retry := opts.Retry.withDefaults()
	sem := make(chan struct{}, parallel)
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]error{}
	for _, ref := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				mu.Lock()
				failed[ref] = ctx.Err()
				mu.Unlock()
				return
			}
			defer func() { <-sem }()
			err := pullOne(ctx, eng, ref, retry, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[ref] = err
			} else {
				res.Pulled = append(res.Pulled, ref)
			}
		}()
	}
	wg.Wait()
	sort.Strings(res.Pulled)
	if len(failed) > 0 {
		if ctx.Err() != nil {
			return res, fmt.Errorf("pulling images: %w", ctx.Err())
		}
		e := &UnavailableError{Policy: policy, Causes: failed}
		for ref := range failed {
			e.Images = append(e.Images, ref)
		}
		sort.Strings(e.Images)
		return res, e
	}
	return res, nil
}

// pullOne pulls ref, retrying transient failures with exponential backoff
// (cenkalti/backoff) and waiting longer after a registry rate limit.
func pullOne(ctx context.Context, eng docker.Engine, ref string, retry Retry, r progress.Reporter) error {
	step := "pull " + ref
	progress.Begin(r, step, "")
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval, eb.MaxInterval = retry.Initial, retry.Max
	tries := 0
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		tries++
		sizes := newLayerSizes()
		var last int64 = -1
		err := eng.ImagePull(ctx, ref, func(p docker.PullProgress) {
			// Every layer reports many times a second; a change of 1 MiB
			// (or a completed image) is worth an event.
			if cur, total, ok := sizes.update(p); ok && (cur-last >= 1<<20 || cur == total && cur != last) {
				last = cur
				progress.Advance(r, step, cur, total, "bytes")
			}
		})
		return struct{}{}, classify(withoutPrefix(err, "pull "+ref+": "), retry)
	},
		backoff.WithBackOff(eb),
		backoff.WithMaxTries(retry.Tries),
		backoff.WithMaxElapsedTime(0), // bounded by Tries; a rate-limit wait may exceed any fixed total
		backoff.WithNotify(func(err error, wait time.Duration) {
			progress.Say(r, step, fmt.Sprintf("try %d failed (%v); retrying in %s", tries, err, wait.Round(100*time.Millisecond)))
		}),
	)
	if err != nil {
		var ra *backoff.RetryAfterError
		if errors.As(err, &ra) {
			err = fmt.Errorf("the registry keeps rate-limiting pulls: %v", err)
		}
		if tries > 1 {
			err = fmt.Errorf("%w (after %d tries)", err, tries)
		}
		progress.Failed(r, step, err)
		return err
	}
	progress.End(r, step, "")
	return nil
}

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
}

func (e *dnsError) Error() string { return e.err.Error() }
func (e *dnsError) Unwrap() error { return e.err }

// lookupFailure is the resolver's failure as the engine reports it (Go's
// resolver, or getaddrinfo's "temporary failure in name resolution").
var lookupFailure = regexp.MustCompile(`(?i)lookup [^\s:]+(?: on \S+)?: (?:(?:read|dial) udp \S+: )?(no such host|server misbehaving|temporary failure in name resolution|i/o timeout)`)

// classify marks errors that retrying cannot fix as permanent and rate
// limits as a longer wait; everything else (network, registry 5xx) is retried.
func classify(err error, retry Retry) error {
	if err == nil {
		return nil
	}
	if l := lookupFailure.FindString(err.Error()); l != "" {
		return backoff.Permanent(&dnsError{err: err, lookup: l})
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

// layerSizes sums one pull's layer downloads into a byte count for the image.
type layerSizes struct {
	layers map[string][2]int64 // id -> current, total
}

func newLayerSizes() *layerSizes { return &layerSizes{layers: map[string][2]int64{}} }

// update records p and returns the image's downloaded and total bytes so
// far; ok is false while no layer size is known.
func (l *layerSizes) update(p docker.PullProgress) (cur, total int64, ok bool) {
	if p.Layer == "" {
		return 0, 0, false
	}
	v, known := l.layers[p.Layer]
	switch p.Status {
	case "Downloading":
		if p.Total > 0 {
			v = [2]int64{p.Current, p.Total}
			known = true
		}
	case "Download complete", "Verifying Checksum", "Extracting", "Pull complete":
		if known {
			v[0] = v[1]
		}
	default:
		return l.sum()
	}
	if known {
		l.layers[p.Layer] = v
	}
	return l.sum()
}

func (l *layerSizes) sum() (cur, total int64, ok bool) {
	for _, v := range l.layers {
		cur += v[0]
		total += v[1]
	}
	return cur, total, total > 0
}
