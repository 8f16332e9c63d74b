package food11

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// VerifyOptions says which volume to check.
type VerifyOptions struct {
	Volume string // DefaultVolume when empty
	Strict bool   // counts that differ from the published Food-11 are an error

	HelperImage string            // DefaultHelperImage when empty
	Labels      map[string]string // extra labels on the helper image and container
	Reporter    progress.Reporter
}

// Report is what Verify found in a volume.
type Report struct {
	Volume   string    `json:"volume"`
	Manifest *Manifest `json:"manifest,omitempty"` // nil: no manifest (never loaded, or incomplete)
	Found    Counts    `json:"found"`              // images counted in the volume, per split and class
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Warnings []string  `json:"warnings,omitempty"` // differences from the published Food-11
	Problems []string  `json:"problems,omitempty"` // what makes the volume wrong
	OK       bool      `json:"ok"`
}

// Verify lists the volume back through the engine (a tar of Food-11 read
// as a stream, nothing extracted), counts images per split and class, and
// compares them with the manifest and with the published Food-11. The
// instructor's verification calls it. The error is nil exactly when OK.
func Verify(ctx context.Context, eng docker.Engine, o VerifyOptions) (Report, error) {
	if o.Volume == "" {
		o.Volume = DefaultVolume
	}
	rep := Report{Volume: o.Volume, Found: Counts{}}
	h, err := openHelper(ctx, eng, o.Volume, o.HelperImage, o.Labels, false)
	if err != nil {
		return rep, err
	}
	defer h.close()
	if rep.Manifest, err = h.readManifest(ctx); err != nil {
		return rep, err
	}
	step := "verify volume " + o.Volume
	progress.Begin(o.Reporter, step, "")
	var unexpected []string
	err = h.walk(ctx, func(f File) error {
		if f.Split == "" {
			unexpected = append(unexpected, f.Path)
			return nil
		}
		rep.Found.Add(f.Split, f.Class)
		rep.Files++
		rep.Bytes += f.Size
		if rep.Files%1000 == 0 {
			progress.Advance(o.Reporter, step, int64(rep.Files), 0, "")
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoRoot) {
		progress.Failed(o.Reporter, step, err)
		return rep, err
	}
	next := clierr.Step("load it again with '%s'", "data", "food11", "--force", "--volume", o.Volume)
	if errors.Is(err, errNoRoot) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("volume %s has no %s folder", o.Volume, Root))
		next = clierr.Step("load it with '%s'", "data", "food11", "--volume", o.Volume)
	} else if rep.Manifest == nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("volume %s has no manifest %s/%s: mltrain did not load it, or its load did not complete", o.Volume, Root, ManifestName))
	} else {
		if !rep.Found.Equal(rep.Manifest.Counts) {
			d := rep.Found.Diff(rep.Manifest.Counts)
			if len(d) > 5 {
				d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
			}
			rep.Problems = append(rep.Problems, "counts differ from the manifest: "+strings.Join(d, "; "))
		}
		if rep.Bytes != rep.Manifest.Bytes {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%d bytes of images, the manifest says %d", rep.Bytes, rep.Manifest.Bytes))
		}
	}
	if len(unexpected) > 0 {
		msg := fmt.Sprintf("%d unexpected entr%s: %s", len(unexpected), plural(len(unexpected), "y", "ies"), strings.Join(firstN(unexpected, 5), ", "))
		rep.Problems = append(rep.Problems, msg)
	}
	if rep.Files > 0 {
		rep.Warnings = CheckCanonical(rep.Found)
	}
	for _, w := range rep.Warnings {
		progress.Warning(o.Reporter, w)
	}
	if o.Strict && len(rep.Warnings) > 0 {
		rep.Problems = append(rep.Problems, "counts differ from the published Food-11 (--strict)")
		next = clierr.Step("load the course's Food-11 zip with '%s', or drop --strict", "data", "food11", "--force", "--volume", o.Volume)
	}
	rep.OK = len(rep.Problems) == 0
	if !rep.OK {
		err := clierr.WithNext(fmt.Errorf("volume %s: %s", o.Volume, strings.Join(rep.Problems, "; ")), next)
		progress.Failed(o.Reporter, step, err)
		return rep, err
	}
	progress.End(o.Reporter, step, fmt.Sprintf("%d images in %d splits match the manifest", rep.Files, len(rep.Found)))
	return rep, nil
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}

// File is one file found in the volume's Food-11 folder.
type File struct {
	Path  string // relative to the volume, e.g. Food-11/training/class_03/3_17.jpg
	Size  int64
	Split string // "" when the path is not in the course's layout
	Class int
	Body  io.Reader // the content, valid only during the callback
}

var errNoRoot = errors.New("no " + Root + " folder")

// Walk calls fn for every regular file under Food-11 in the volume, in the
// engine's order, reading the volume through the engine as a tar stream. The
// manifest itself is skipped.
func Walk(ctx context.Context, eng docker.Engine, volume, helperImage string, labels map[string]string, fn func(File) error) error {
	h, err := openHelper(ctx, eng, volume, helperImage, labels, false)
	if err != nil {
		return err
	}
	defer h.close()
	return h.walk(ctx, fn)
}

func (h *helper) walk(ctx context.Context, fn func(File) error) error {
	// The trailing "/." archives the folder's content even if it were a symlink.
	rc, err := h.eng.CopyFromContainer(ctx, h.id, path.Join(mountPoint, Root)+"/.")
	if err != nil {
		if docker.IsNotFound(err) {
			return errNoRoot
		}
		return fmt.Errorf("list volume %s: %w", h.volume, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list volume %s: %w", h.volume, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		rel := relToRoot(hdr.Name)
		if rel == ManifestName {
			continue
		}
		f := File{Path: Root + "/" + rel, Size: hdr.Size, Body: tr}
		if hdr.Typeflag == tar.TypeReg {
			f.Split, f.Class = placeOf(rel)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
}

// relToRoot turns the archive's names ("./training/..", "Food-11/training/..",
// "./" roots depending on the engine) into a path relative to Food-11.
func relToRoot(name string) string {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	for _, p := range []string{Root + "/", "./"} {
		name = strings.TrimPrefix(name, p)
	}
	return name
}

// placeOf checks a path relative to Food-11 against the course's layout and
// returns its split and class, or "" when it does not fit.
func placeOf(rel string) (string, int) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || !isSplit(parts[0]) || !strings.HasPrefix(parts[1], "class_") || len(parts[1]) != len("class_00") {
		return "", 0
	}
	cc, err := strconv.Atoi(parts[1][len("class_"):])
	if err != nil || cc < 0 || cc >= NumClasses {
		return "", 0
	}
	m := imageName.FindStringSubmatch(parts[2])
	if m == nil || m[1] != strconv.Itoa(cc) {
		return "", 0
	}
	return parts[0], cc
}

// ReadManifest returns the volume's manifest without listing the images: a
// cheap "is the dataset loaded" for up, status and doctor. It is nil (and
// no error) when the volume exists without one; an absent volume is an
// error docker.IsNotFound recognises.
func ReadManifest(ctx context.Context, eng docker.Engine, o VerifyOptions) (*Manifest, error) {
	if o.Volume == "" {
		o.Volume = DefaultVolume
	}
	h, err := openHelper(ctx, eng, o.Volume, o.HelperImage, o.Labels, false)
	if err != nil {
		return nil, err
	}
	defer h.close()
	return h.readManifest(ctx)
}
