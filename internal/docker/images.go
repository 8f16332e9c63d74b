package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

func (s *SDK) ImageInspect(ctx context.Context, ref string) (Image, error) {
	r, err := s.c.ImageInspect(ctx, ref)
	if err != nil {
		return Image{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	img := Image{ID: r.ID, Tags: r.RepoTags, Size: r.Size, Created: r.Created}
	if r.Config != nil {
		img.Labels = r.Config.Labels
	}
	return img, nil
}

func (s *SDK) ImageBuild(ctx context.Context, o BuildOptions) (string, error) {
	args := map[string]*string{}
	for k, v := range o.BuildArgs {
		v := v
		args[k] = &v
	}
	df := o.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	r, err := s.c.ImageBuild(ctx, o.Context, client.ImageBuildOptions{
		Tags: o.Tags, Labels: o.Labels, BuildArgs: args, Dockerfile: df,
		NoCache: o.NoCache, PullParent: o.Pull, Remove: true, ForceRemove: true,
	})
	if err != nil {
		return "", fmt.Errorf("build %s: %w", strings.Join(o.Tags, ","), err)
	}
	defer r.Body.Close()
	var id string
	var tail []string // last lines, so a failed step shows its output
	err = readJSONStream(r.Body, func(m jsonstream.Message) error {
		if m.Error != nil {
			return &BuildError{Tags: o.Tags, Message: m.Error.Message, Tail: tail}
		}
		if m.Aux != nil {
			var aux struct{ ID string }
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
		for _, line := range strings.Split(strings.TrimRight(m.Stream, "\n"), "\n") {
			if line == "" {
				continue
			}
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			if o.OnLine != nil {
				o.OnLine(line)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// BuildError is a failed Dockerfile step with the output that led to it.
type BuildError struct {
	Tags    []string
	Message string
	Tail    []string
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("build %s failed: %s", strings.Join(e.Tags, ","), e.Message)
	if len(e.Tail) > 0 {
		msg += "\n  last build output:\n    " + strings.Join(e.Tail, "\n    ")
	}
	return msg
}

func (s *SDK) ImagePull(ctx context.Context, ref string, onProgress func(PullProgress)) error {
	r, err := s.c.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer r.Close()
	return readJSONStream(r, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("pull %s: %s", ref, m.Error.Message)
		}
		if onProgress != nil {
			p := PullProgress{Layer: m.ID, Status: m.Status}
			if m.Progress != nil {
				p.Current, p.Total = m.Progress.Current, m.Progress.Total
			}
			onProgress(p)
		}
		return nil
	})
}

func readJSONStream(r io.Reader, fn func(jsonstream.Message) error) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read engine progress stream: %w", err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

func (s *SDK) ImageSave(ctx context.Context, refs []string, w io.Writer) error {
	r, err := s.c.ImageSave(ctx, refs)
	if err != nil {
		return fmt.Errorf("save images %s: %w", strings.Join(refs, ","), err)
	}
	defer r.Close()
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("save images %s: %w", strings.Join(refs, ","), err)
	}
	return nil
}

func (s *SDK) ImageLoad(ctx context.Context, in io.Reader) ([]string, error) {
	r, err := s.c.ImageLoad(ctx, in, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	defer r.Close()
	var loaded []string
	err = readJSONStream(r, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("load images: %s", m.Error.Message)
		}
		for _, p := range []string{"Loaded image: ", "Loaded image ID: "} {
			if strings.HasPrefix(m.Stream, p) {
				loaded = append(loaded, strings.TrimSpace(strings.TrimPrefix(m.Stream, p)))
			}
		}
		return nil
	})
	return loaded, err
}

func (s *SDK) ImageImport(ctx context.Context, r io.Reader, ref string, changes []string) error {
	res, err := s.c.ImageImport(ctx, client.ImageImportSource{Source: r, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	defer res.Close()
	return readJSONStream(res, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("import image %s: %s", ref, m.Error.Message)
		}
		return nil
	})
}

func (s *SDK) ImageRemove(ctx context.Context, ref string) error {
	if _, err := s.c.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}
