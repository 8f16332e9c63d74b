// Package dockerfiles holds the lab's own images (Ray workers for CUDA and
// ROCm, Jupyter with Ray) embedded in the binary, and names them by content:
// mltrain/<name>:<ray version>-<hash>, so a changed Dockerfile means a new tag
// and an unchanged one is never rebuilt.
package dockerfiles

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"github.com/mltrain/mltrain/internal/images"
)

//go:embed Dockerfile.*
var files embed.FS

// Kind is one of the images mltrain builds.
type Kind string

const (
	RayCUDA    Kind = "ray-cuda"
	RayROCm    Kind = "ray-rocm"
	JupyterRay Kind = "jupyter-ray"
)

// Kinds lists every buildable image.
var Kinds = []Kind{RayCUDA, RayROCm, JupyterRay}

// Dockerfile returns the embedded Dockerfile of kind.
func Dockerfile(k Kind) ([]byte, error) {
	b, err := files.ReadFile("Dockerfile." + string(k))
	if err != nil {
		return nil, fmt.Errorf("no embedded Dockerfile for image %q: %w", k, err)
	}
	return b, nil
}

// Hash is the content hash of kind's build: its Dockerfile and the Ray
// version it is built for. 12 hex digits.
func Hash(k Kind, rayVersion string) (string, error) {
	b, err := Dockerfile(k)
	if err != nil {
		return "", err
	}
	return images.HashOf(string(k), rayVersion, b), nil
}

// Ref is the image reference mltrain builds for kind and rayVersion.
func Ref(k Kind, rayVersion string) (string, error) {
	hash, err := Hash(k, rayVersion)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("mltrain/%s:%s-%s", k, rayVersion, hash), nil
}

// names lists the embedded files (for checks over every Dockerfile).
func names() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
