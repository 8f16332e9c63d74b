package images

import (
	"context"
	"errors"
	"fmt"
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
	// A registry this host cannot resolve or reach stops every image it
	// holds for one reason: one line per registry, naming the images (the
	// reason's words may differ between pulls, a resolver's port say).
	byRegistry := map[string][]string{}
	why := map[string]string{}
	var registries []string
	for _, ref := range e.Images {
		var nt *TagNotFoundError
		c := e.Causes[ref]
		if reg, w, ok := registryProblem(c); ok {
			if byRegistry[reg] == nil {
				registries = append(registries, reg)
				why[reg] = w
			}
			byRegistry[reg] = append(byRegistry[reg], ref)
			continue
		}
		switch {
		case errors.As(c, &nt):
			fmt.Fprintf(&b, "\n  %v", nt) // it names the image and the tag
		case c != nil:
			fmt.Fprintf(&b, "\n  %s: %v", ref, c)
		default:
			fmt.Fprintf(&b, "\n  %s", ref)
		}
	}
	for _, reg := range registries {
		fmt.Fprintf(&b, "\n  registry %s: %s; not pulled: %s", reg, why[reg], strings.Join(byRegistry[reg], ", "))
	}
	return b.String()
}

// Summary is the error's first line with how many registries stopped the
// pulls: a progress view shows it where the whole message would repeat
// what the command's error says below it.
func (e *UnavailableError) Summary() string {
	if e.Policy == PullNever {
		return fmt.Sprintf("%d image(s) are not on this host and --pull never forbids pulling them", len(e.Images))
	}
	regs := map[string]bool{}
	for _, ref := range e.Images {
		if reg, _, ok := registryProblem(e.Causes[ref]); ok {
			regs[reg] = true
		}
	}
	s := fmt.Sprintf("could not pull %d image(s)", len(e.Images))
	if len(regs) > 0 {
		s += fmt.Sprintf(", %d registry(ies) out of reach", len(regs))
	}
	return s + " (see the error below)"
}

// Unwrap gives errors.As and errors.Is each image's cause (sorted by
// image), so a caller can find, say, a TagNotFoundError among them.
func (e *UnavailableError) Unwrap() []error {
	var errs []error
	for _, ref := range e.Images {
		if c := e.Causes[ref]; c != nil {
			errs = append(errs, c)
		}
	}
	return errs
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
			if wait, ok := sizes.retrying(p); ok {
				// The engine's own retry of a layer whose download broke off
				// (it then resumes where it stopped): said once per break.
				progress.Say(r, step, fmt.Sprintf("layer %s: download cut off, the engine retries in %s", p.Layer, wait))
			}
		})
		return struct{}{}, classify(typed(ref, withoutPrefix(err, "pull "+ref+": ")), retry)
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
		if reg, _, ok := registryProblem(err); ok {
			// The reason is said once, with the registry, in the error.
			progress.Failed(r, step, fmt.Errorf("%s is out of reach (see below)", reg))
		} else {
			progress.Failed(r, step, err)
		}
		return err
	}
	progress.End(r, step, "")
	return nil
}

// layerSizes sums one pull's layer downloads into a byte count for the image.
type layerSizes struct {
	layers map[string][2]int64 // id -> current, total
	broken map[string]bool     // layers counting down to the engine's retry
}

func newLayerSizes() *layerSizes {
	return &layerSizes{layers: map[string][2]int64{}, broken: map[string]bool{}}
}

// retrying reports the engine's first "Retrying in N seconds" of a layer
// after a break, with "N seconds"; the countdown's later ticks are not
// reported.
func (l *layerSizes) retrying(p docker.PullProgress) (wait string, ok bool) {
	wait, ok = strings.CutPrefix(p.Status, "Retrying in ")
	if !ok {
		if p.Status == "Downloading" {
			l.broken[p.Layer] = false
		}
		return "", false
	}
	if l.broken[p.Layer] {
		return "", false
	}
	l.broken[p.Layer] = true
	return wait, true
}

// update records p and returns the image's downloaded and total bytes so
// far; ok is false while no layer size is known.
func (l *layerSizes) update(p docker.PullProgress) (cur, total int64, ok bool) {
	if p.Layer == "" {
		return 0, 0, false
	}
	v, known := l.layers[p.Layer]
	switch p.Status {
	case "Downloading":
		switch {
		case p.Total <= 0:
		case known && p.Total < v[1]:
			// The engine resumed a broken download with a range request:
			// it counts from where it resumed, against what was left.
			v[0] = v[1] - p.Total + p.Current
		default:
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
