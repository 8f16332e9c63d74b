package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// BuildResult says what Build did.
type BuildResult struct {
	Ref   string `json:"ref"`
	ID    string `json:"id"`
	Built bool   `json:"built"` // false: an image with the same content hash was already here
}

// Build builds one image unless an image tagged s.Ref with s.Hash as its
// content-hash label exists (rebuild forces it). Its base images must be
// present (Ensure pulls them first): the engine is never asked to pull, so
// pulls get the retries and errors of Pull.
func Build(ctx context.Context, eng docker.Engine, s Spec, rebuild bool, r progress.Reporter) (BuildResult, error) {
	if !rebuild {
		img, err := eng.ImageInspect(ctx, s.Ref)
		if err == nil && img.Labels[labels.ImageHash] == s.Hash {
			return BuildResult{Ref: s.Ref, ID: img.ID}, nil
		}
		if err != nil && !docker.IsNotFound(err) {
			return BuildResult{}, fmt.Errorf("inspect image %s: %w", s.Ref, err)
		}
	}
	id, err := build(ctx, eng, s, r)
	if err != nil {
		return BuildResult{}, err
	}
	return BuildResult{Ref: s.Ref, ID: id, Built: true}, nil
}

// upToDate reports whether s.Ref exists with s's content hash.
func upToDate(ctx context.Context, eng docker.Engine, s Spec) (bool, error) {
	img, err := eng.ImageInspect(ctx, s.Ref)
	if docker.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect image %s: %w", s.Ref, err)
	}
	return img.Labels[labels.ImageHash] == s.Hash, nil
}

func build(ctx context.Context, eng docker.Engine, s Spec, r progress.Reporter) (string, error) {
	step := "build " + s.Ref
	progress.Begin(r, step, "")
	lbl := map[string]string{labels.ImageHash: s.Hash, labels.ImageKind: s.Kind}
	maps.Copy(lbl, s.Labels)
	buildCtx, err := contextTar(s.Dockerfile)
	if err != nil {
		progress.Failed(r, step, err)
		return "", err
	}
	var lastStep string // the classic builder announces each step as "Step N/M : ..."
	id, err := eng.ImageBuild(ctx, docker.BuildOptions{
		Context:   buildCtx,
		Tags:      []string{s.Ref},
		Labels:    lbl,
		BuildArgs: s.BuildArgs,
		OnLine: func(line string) {
			line = cleanLine(line)
			if line == "" {
				return
			}
			if strings.HasPrefix(line, "Step ") {
				lastStep = line
			}
			progress.Say(r, step, line)
		},
	})
	if err != nil {
		err = buildFailed(s, lastStep, err)
		progress.Failed(r, step, err)
		return "", err
	}
	progress.End(r, step, shortID(id))
	return id, nil
}

// StepError is a build that failed at a Dockerfile step.
type StepError struct {
	Ref     string
	Step    string   // "Step 3/5 : RUN ...", "" when the build failed before any step
	Message string   // the engine's error
	Tail    []string // the last lines of build output
}

func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "build %s failed", e.Ref)
	if e.Step != "" {
		fmt.Fprintf(&b, " at %s", e.Step)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if len(e.Tail) > 0 {
		b.WriteString("\n  last build output:\n    ")
		b.WriteString(strings.Join(e.Tail, "\n    "))
	}
	return b.String()
}

// BuildError is an image build that failed: Err is a *StepError when the
// build got as far as a Dockerfile step. LabImage says whether the image is
// one of the lab's own (its build downloads from the package sources its
// Dockerfile names, and prebuilt images can replace it).
type BuildError struct {
	Ref      string
	LabImage bool
	Err      error
}

func (e *BuildError) Error() string { return e.Err.Error() }
func (e *BuildError) Unwrap() error { return e.Err }

func buildFailed(s Spec, lastStep string, err error) error {
	failed := &BuildError{Ref: s.Ref, LabImage: s.Role != "", Err: fmt.Errorf("build %s: %w", s.Ref, err)}
	var be *docker.BuildError
	if errors.As(err, &be) {
		var tail []string
		for _, l := range be.Tail {
			if l = cleanLine(l); l != "" && !builderNoise(l) {
				tail = append(tail, l)
			}
		}
		failed.Err = &StepError{Ref: s.Ref, Step: lastStep, Message: be.Message, Tail: tail}
	}
	return failed
}

// ansi matches the colour codes the classic builder puts around a step's stderr.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func cleanLine(l string) string { return strings.TrimRight(ansi.ReplaceAllString(l, ""), " \t\r") }

// builderNoise is the builder's own bookkeeping, not the step's output.
func builderNoise(l string) bool {
	return strings.HasPrefix(l, "Removing intermediate container") || strings.HasPrefix(l, " ---> ")
}

// contextTar is the build context: the Dockerfile alone (the lab's images
// COPY nothing), in memory.
func contextTar(dockerfile []byte) (*bytes.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	return bytes.NewReader(buf.Bytes()), nil
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}
