// Package images gets the lab's images onto this host: it pulls the pinned
// external images (in parallel, with retries and one progress view), builds
// mltrain's own images from the embedded Dockerfiles (content-hashed, never
// rebuilt needlessly), and saves/loads them as one tarball so nodes without
// a registry can be preloaded. `mltrain build` and `mltrain up` both call
// Ensure.
package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// PullPolicy says when an external image is pulled.
type PullPolicy string

const (
	PullMissing PullPolicy = "missing" // pull only what is not here (default)
	PullAlways  PullPolicy = "always"  // pull every image, to pick up a re-pushed tag
	PullNever   PullPolicy = "never"   // never pull: a missing image is an error
)

// ParsePullPolicy reads a --pull value; "" means missing.
func ParsePullPolicy(s string) (PullPolicy, error) {
	switch PullPolicy(s) {
	case "", PullMissing:
		return PullMissing, nil
	case PullAlways, PullNever:
		return PullPolicy(s), nil
	}
	return "", clierr.Hintf("use --pull missing, --pull always or --pull never",
		"--pull %q is not a pull policy (missing, always, never)", s)
}

// Retry bounds the retries of one pull. Zero fields take the defaults.
type Retry struct {
	Tries         uint          // attempts in all; default 4
	Initial       time.Duration // first wait; default 2s, doubling
	Max           time.Duration // longest wait; default 20s
	RateLimitWait time.Duration // wait after a registry rate limit; default 30s
}

func (r Retry) withDefaults() Retry {
	if r.Tries == 0 {
		r.Tries = 4
	}
	if r.Initial == 0 {
		r.Initial = 2 * time.Second
	}
	if r.Max == 0 {
		r.Max = 20 * time.Second
	}
	if r.RateLimitWait == 0 {
		r.RateLimitWait = 30 * time.Second
	}
	return r
}

// Options tune Ensure; the zero value pulls missing images with the default
// retries and builds only what is out of date.
type Options struct {
	Pull     PullPolicy
	Rebuild  bool // build even when an image with the same content hash exists
	Retry    Retry
	Parallel int // concurrent pulls; default 4
}

// Spec is one image mltrain builds: its Dockerfile bytes, build arguments
// and the content-addressed tag. The dockerfiles package makes the lab's;
// NewSpec any other (tests build FROM scratch Dockerfiles through the same
// path).
type Spec struct {
	Kind       string // ray-cuda, ray-rocm, jupyter-ray, or a test name
	RayVersion string
	Dockerfile []byte
	BuildArgs  map[string]string
	Labels     map[string]string // extra labels (tests add dockertest.TestLabel)
	Hash       string            // content hash, also the label labels.ImageHash
	Ref        string            // mltrain/<kind>:<ray version>-<hash>
	// Role is what a lab image is for: RoleWorker or RoleJupyter ("" for
	// any other build). Ensure compares the versions of the two.
	Role string
}

// Roles of the lab's images.
const (
	RoleWorker  = "worker"
	RoleJupyter = "jupyter"
)

// NewSpec is a build of any Dockerfile, named and hashed like the lab's.
func NewSpec(name, rayVersion string, dockerfile []byte) Spec {
	hash := HashOf(name, rayVersion, dockerfile)
	return Spec{
		Kind: name, RayVersion: rayVersion, Dockerfile: dockerfile,
		BuildArgs: map[string]string{"RAY_VERSION": rayVersion},
		Hash:      hash, Ref: fmt.Sprintf("mltrain/%s:%s-%s", name, rayVersion, hash),
	}
}

// HashOf is the content hash of a build (name, Ray version, Dockerfile
// bytes): a changed Dockerfile means a new tag, an unchanged one is never
// rebuilt. 12 hex digits.
func HashOf(name, rayVersion string, dockerfile []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "kind=%s\nray=%s\n", name, rayVersion)
	h.Write(dockerfile)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Request is what a lab needs: external images to pull and images to build.
type Request struct {
	Pull  []string
	Build []Spec
}

// Result says what Ensure did with each image.
type Result struct {
	Present  []string `json:"present"` // external images already here
	Pulled   []string `json:"pulled"`
	Built    []string `json:"built"`
	UpToDate []string `json:"up_to_date"` // builds skipped: same content hash already built
	Warnings []string `json:"warnings"`
}

// Ensure makes every image of req present: pulls (per opts.Pull) the
// external images and the bases of the builds that are needed, then builds
// what is missing or out of date, one at a time. Errors name the image and,
// for images this host cannot get, how to preload them. It finally compares
// Ray and Python between the worker, Jupyter and Ray head images and
// reports any mismatch as a warning.
func Ensure(ctx context.Context, eng docker.Engine, req Request, opts Options, r progress.Reporter) (Result, error) {
	var res Result
	if _, err := ParsePullPolicy(string(opts.Pull)); err != nil {
		return res, err
	}
	for _, ref := range req.Pull {
		if err := CheckPinned(ref); err != nil {
			return res, clierr.WithHint(err, "pin the image to a version tag in the lab's configuration")
		}
	}
	pull := append([]string(nil), req.Pull...)
	var todo []Spec
	for _, s := range req.Build {
		fresh, err := upToDate(ctx, eng, s)
		if err != nil {
			return res, err
		}
		if fresh && !opts.Rebuild {
			res.UpToDate = append(res.UpToDate, s.Ref)
			progress.Note(r, fmt.Sprintf("%s is up to date (content hash %s)", s.Ref, s.Hash))
			continue
		}
		bases, err := Bases(s)
		if err != nil {
			return res, err
		}
		pull = append(pull, bases...)
		todo = append(todo, s)
	}
	pr, err := Pull(ctx, eng, Dedupe(pull), opts, r)
	res.Present, res.Pulled = pr.Present, pr.Pulled
	if err != nil {
		return res, err
	}
	for _, s := range todo {
		if _, err := build(ctx, eng, s, r); err != nil {
			return res, err
		}
		res.Built = append(res.Built, s.Ref)
	}
	res.Warnings = checkRequest(ctx, eng, req)
	for _, w := range res.Warnings {
		progress.Warning(r, w)
	}
	return res, nil
}

// Bases are the pinned base images s builds FROM.
func Bases(s Spec) ([]string, error) {
	bases, err := BaseImages(s.Dockerfile, s.BuildArgs)
	if err != nil {
		return nil, fmt.Errorf("the Dockerfile of %s: %w", s.Ref, err)
	}
	for _, b := range bases {
		if err := CheckPinned(b); err != nil {
			return nil, fmt.Errorf("the Dockerfile of %s: %w", s.Ref, err)
		}
	}
	return bases, nil
}

// Dedupe drops repeated references, keeping the first.
func Dedupe(refs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
