// Package images gets the lab's images onto this host: it pulls the pinned
// external images (in parallel, with retries and one progress view), builds
// mltrain's own images from the embedded Dockerfiles (content-hashed, never
// rebuilt needlessly), and saves/loads them as one tarball so nodes without
// a registry can be preloaded. `mltrain build` and `mltrain up` both call
// Ensure.
package images

import (
	"context"
	"fmt"
	"time"

	"github.com/mltrain/mltrain/dockerfiles"
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
// and the content-addressed tag. LabSpec makes the lab's; NewSpec any other
// (tests build FROM scratch Dockerfiles through the same path).
type Spec struct {
	Kind       dockerfiles.Kind // ray-cuda, ray-rocm, jupyter-ray, or a test name
	RayVersion string
	Dockerfile []byte
	BuildArgs  map[string]string
	Labels     map[string]string // extra labels (tests add dockertest.TestLabel)
	Hash       string            // content hash, also the label dockerfiles.LabelHash
	Ref        string            // mltrain/<kind>:<ray version>-<hash>
}

// LabSpec is the build of one of the embedded images; its Ref equals
// dockerfiles.Ref(k, rayVersion).
func LabSpec(k dockerfiles.Kind, rayVersion string) (Spec, error) {
	df, err := dockerfiles.Dockerfile(k)
	if err != nil {
		return Spec{}, err
	}
	ref, err := dockerfiles.Ref(k, rayVersion)
	if err != nil {
		return Spec{}, err
	}
	hash, err := dockerfiles.Hash(k, rayVersion)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Kind: k, RayVersion: rayVersion, Dockerfile: df, BuildArgs: dockerfiles.BuildArgs(k, rayVersion), Hash: hash, Ref: ref}, nil
}

// NewSpec is a build of any Dockerfile, named and hashed like the lab's.
func NewSpec(name, rayVersion string, dockerfile []byte) Spec {
	hash := dockerfiles.HashOf(name, rayVersion, dockerfile)
	return Spec{
		Kind: dockerfiles.Kind(name), RayVersion: rayVersion, Dockerfile: dockerfile,
		BuildArgs: map[string]string{"RAY_VERSION": rayVersion},
		Hash:      hash, Ref: fmt.Sprintf("mltrain/%s:%s-%s", name, rayVersion, hash),
	}
}

// WorkerKind is the worker image a host with GPUs of vendor (gpu.Vendor:
// "nvidia", "amd", or "" for none) needs. With no
// GPU (CPU rehearsal) it is the CUDA image: its PyTorch runs on CPU, it is
// several times smaller than the ROCm image, and a rehearsal then runs the
// very image an NVIDIA lab runs.
func WorkerKind(vendor string) dockerfiles.Kind {
	if vendor == "amd" {
		return dockerfiles.RayROCm
	}
	return dockerfiles.RayCUDA
}

// LabSpecs are the builds a host with GPUs of vendor needs: its worker image
// and the Jupyter image.
func LabSpecs(vendor string, rayVersion string) ([]Spec, error) {
	var out []Spec
	for _, k := range []dockerfiles.Kind{WorkerKind(vendor), dockerfiles.JupyterRay} {
		s, err := LabSpec(k, rayVersion)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Request is what a lab needs: external images to pull and images to build.
type Request struct {
	Pull  []string
	Build []Spec
}

// RequestFor sorts the images a plan uses into what to build and what to
// pull: a ref equal to dockerfiles.Ref(kind, rayVersion) of an embedded
// image is built, any other is pulled (and must be pinned). Duplicates are
// dropped. This is the call 'mltrain up' makes with its plan's images.
func RequestFor(rayVersion string, refs []string) (Request, error) {
	built := map[string]dockerfiles.Kind{}
	for _, k := range dockerfiles.Kinds {
		ref, err := dockerfiles.Ref(k, rayVersion)
		if err != nil {
			return Request{}, err
		}
		built[ref] = k
	}
	var req Request
	for _, ref := range dedupe(refs) {
		k, ok := built[ref]
		if !ok {
			req.Pull = append(req.Pull, ref)
			continue
		}
		s, err := LabSpec(k, rayVersion)
		if err != nil {
			return Request{}, err
		}
		req.Build = append(req.Build, s)
	}
	return req, nil
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
		if err := dockerfiles.CheckPinned(ref); err != nil {
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
		bases, err := baseImages(s)
		if err != nil {
			return res, err
		}
		pull = append(pull, bases...)
		todo = append(todo, s)
	}
	pr, err := Pull(ctx, eng, dedupe(pull), opts, r)
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

func baseImages(s Spec) ([]string, error) {
	bases, err := dockerfiles.BaseImages(s.Dockerfile, s.BuildArgs)
	if err != nil {
		return nil, fmt.Errorf("Dockerfile of %s: %w", s.Ref, err)
	}
	for _, b := range bases {
		if err := dockerfiles.CheckPinned(b); err != nil {
			return nil, fmt.Errorf("Dockerfile of %s: %w", s.Ref, err)
		}
	}
	return bases, nil
}

func dedupe(refs []string) []string {
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
