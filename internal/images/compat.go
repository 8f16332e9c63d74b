package images

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
)

// Versions are the Ray and Python versions an image's labels declare
// (labels.ImageRayVersion, labels.ImagePythonVersion); "" where a label is
// missing.
type Versions struct{ Ray, Python string }

// LabelledVersions reads the versions img's labels declare.
func LabelledVersions(img docker.Image) Versions {
	return Versions{Ray: img.Labels[labels.ImageRayVersion], Python: img.Labels[labels.ImagePythonVersion]}
}

// VersionMismatch is one version an image declares that is not the one
// wanted, or that one side leaves unsaid (Got or Want is "").
type VersionMismatch struct {
	What  string // "Ray" or "Python"
	Label string // the image label that declares it
	Got   string // the image's
	Want  string // the one it is held against
}

// CompareVersions holds the versions img's labels declare against want.
// Ray refuses a node or driver whose Ray or Python differs from the
// cluster's, so each caller words what a mismatch breaks for it.
func CompareVersions(img docker.Image, want Versions) []VersionMismatch {
	got := LabelledVersions(img)
	var out []VersionMismatch
	for _, c := range []VersionMismatch{
		{What: "Ray", Label: labels.ImageRayVersion, Got: got.Ray, Want: want.Ray},
		{What: "Python", Label: labels.ImagePythonVersion, Got: got.Python, Want: want.Python},
	} {
		if c.Got == "" || c.Want == "" || c.Got != c.Want {
			out = append(out, c)
		}
	}
	return out
}

// compareWithJupyter warns, one line per mismatch or missing label, where a
// worker image and the Jupyter image declare different Ray or Python
// versions: Ray rejects a driver whose versions differ from the cluster's,
// so a mismatch breaks jobs started from Jupyter.
func compareWithJupyter(workerRef string, worker docker.Image, jupyterRef string, jupyter docker.Image) []string {
	var out []string
	for _, m := range CompareVersions(worker, LabelledVersions(jupyter)) {
		switch {
		case m.Got == "" || m.Want == "":
			missing := workerRef
			if m.Got != "" {
				missing = jupyterRef
			}
			out = append(out, fmt.Sprintf("cannot compare %s versions: image %s has no %s label (not built by mltrain?)", m.What, missing, m.Label))
		default:
			out = append(out, fmt.Sprintf("%s versions differ: worker image %s has %s %s, Jupyter image %s has %s %s; "+
				"jobs and ray.init from Jupyter may fail: rebuild both images", m.What, workerRef, m.What, m.Got, jupyterRef, m.What, m.Want))
		}
	}
	return out
}

// rayTag reads a rayproject/ray tag: 2.54.0, 2.54.0-py312, 2.54.0-py312-gpu.
var rayTag = regexp.MustCompile(`^(\d+\.\d+\.\d+)(?:-py(\d)(\d+))?`)

// RayImageVersions returns the Ray and Python versions a rayproject/ray
// reference names; ok is false for other images. A tag without -pyXY is
// Ray's default Python, 3.10 for the 2.5x releases mltrain targets.
func RayImageVersions(ref string) (ray, python string, ok bool) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil || reference.FamiliarName(named) != "rayproject/ray" {
		return "", "", false
	}
	t, isTagged := named.(reference.Tagged)
	if !isTagged {
		return "", "", false
	}
	m := rayTag.FindStringSubmatch(t.Tag())
	if m == nil {
		return "", "", false
	}
	python = "3.10"
	if m[2] != "" {
		python = m[2] + "." + m[3]
	}
	return m[1], python, true
}

// CompareHead warns when the Ray head image (a rayproject/ray tag) runs a
// different Ray or Python than a worker image's labels: Ray refuses such
// nodes.
func CompareHead(headRef, workerRef string, worker docker.Image) []string {
	ray, python, ok := RayImageVersions(headRef)
	if !ok {
		return nil
	}
	var out []string
	if w := worker.Labels[labels.ImageRayVersion]; w != "" && w != ray {
		out = append(out, fmt.Sprintf("the Ray head image %s runs Ray %s but worker image %s has Ray %s: the workers cannot join", headRef, ray, workerRef, w))
	}
	if w := worker.Labels[labels.ImagePythonVersion]; w != "" && w != python {
		out = append(out, fmt.Sprintf("the Ray head image %s runs Python %s but worker image %s has Python %s: the workers cannot join; use rayproject/ray:%s-py%s for the head",
			headRef, python, workerRef, w, ray, strings.ReplaceAll(w, ".", "")))
	}
	return out
}

// checkRequest runs the version checks over what Ensure just made present:
// every worker against the Jupyter image, and against any rayproject/ray
// image pulled for the head. Inspection problems become warnings too.
func checkRequest(ctx context.Context, eng docker.Engine, req Request) []string {
	var workers []Spec
	var jupyter *Spec
	for i, s := range req.Build {
		switch s.Role {
		case RoleWorker:
			workers = append(workers, s)
		case RoleJupyter:
			jupyter = &req.Build[i]
		}
	}
	var out []string
	for _, w := range workers {
		img, err := eng.ImageInspect(ctx, w.Ref)
		if err != nil {
			out = append(out, fmt.Sprintf("cannot check versions of %s: %v", w.Ref, err))
			continue
		}
		if jupyter != nil {
			j, err := eng.ImageInspect(ctx, jupyter.Ref)
			if err != nil {
				out = append(out, fmt.Sprintf("cannot check versions of %s: %v", jupyter.Ref, err))
			} else {
				out = append(out, compareWithJupyter(w.Ref, img, jupyter.Ref, j)...)
			}
		}
		for _, p := range req.Pull {
			if strings.Contains(p, "rayproject/ray:") {
				out = append(out, CompareHead(p, w.Ref, img)...)
			}
		}
	}
	return out
}
