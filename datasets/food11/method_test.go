package food11

import (
	"archive/tar"
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// meta reads every entry's metadata under Food-11 from the volume's tar:
// path -> "type mode uid:gid mtime" (directories' times are the load's own).
func (e *testEnv) meta(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	h, err := openHelper(ctx, e.eng, e.volume, e.image, e.labels, false)
	require.NoError(t, err)
	defer h.close()
	rc, err := e.eng.CopyFromContainer(ctx, h.id, path.Join(mountPoint, Root)+"/.")
	require.NoError(t, err)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if strings.HasSuffix(hdr.Name, ManifestName) {
			continue
		}
		m := fmt.Sprintf("%c %o %d:%d", hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid)
		if hdr.Typeflag == tar.TypeReg {
			m += " " + hdr.ModTime.UTC().String()
		}
		out[strings.TrimSuffix(hdr.Name, "/")] = m
	}
}

// The extractor and the archive path must leave the same volume: same
// files, bytes, modes, owners and times.
func TestLoadMethodsWriteIdenticalVolumes(t *testing.T) {
	files, want := mixed()
	got := map[string]map[string]string{}
	meta := map[string]map[string]string{}
	for _, method := range []string{MethodExtractor, MethodArchive} {
		e := newEnv(t)
		o := e.opts(writeZip(t, e.dir, "mixed.zip", files))
		o.Method = method
		res, err := Run(context.Background(), e.eng, o)
		require.NoError(t, err, method)
		assert.Equal(t, method, res.Method)
		got[method], meta[method] = e.listBack(t), e.meta(t)
		assert.Equal(t, want, got[method], method)
		m, err := ReadManifest(context.Background(), e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels})
		require.NoError(t, err)
		require.NotNil(t, m)
		assert.Equal(t, res.Manifest.Counts, m.Counts)
	}
	assert.Equal(t, got[MethodArchive], got[MethodExtractor])
	require.NotEmpty(t, meta[MethodArchive])
	assert.Equal(t, meta[MethodArchive], meta[MethodExtractor])
}

// bindRefused is the error an engine on another host gives for a bind mount
// of a path it does not have.
func bindRefused(spec *docker.ContainerSpec) error {
	for _, m := range spec.HostConfig.Mounts {
		if m.Type == mount.TypeBind {
			return fmt.Errorf("Error response from daemon: invalid mount config for type \"bind\": bind source path does not exist: %s", m.Source)
		}
	}
	return nil
}

func isExtractor(spec *docker.ContainerSpec) bool {
	return strings.Contains(spec.Name, "-extract-")
}

// Where the extractor cannot run, the default load streams through the
// archive API instead and says why; --method extractor fails and writes
// nothing.
func TestLoadFallsBackWhenTheExtractorCannotRun(t *testing.T) {
	cases := []struct {
		name, why string
		create    func(*docker.ContainerSpec) error
	}{
		{"engine on another host", "cannot mount this host's files", bindRefused},
		{"binary does not start", "start", func(s *docker.ContainerSpec) error {
			if isExtractor(s) {
				s.Config.Entrypoint = []string{"/x/absent"}
			}
			return nil
		}},
		{"engine sees another zip", "holds another file", func(s *docker.ContainerSpec) error {
			if isExtractor(s) {
				for i, kv := range s.Config.Env {
					if strings.HasPrefix(kv, extractorDigestEnv+"=") {
						s.Config.Env[i] = extractorDigestEnv + "=0000"
					}
				}
			}
			return nil
		}},
	}
	files, want := dataset("", small(), zip.Store)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.eng.onCreate = c.create
			zp := writeZip(t, e.dir, "food11.zip", files)

			o := e.opts(zp)
			o.Method = MethodExtractor
			_, err := Run(context.Background(), e.eng, o)
			require.Error(t, err)
			assert.ErrorIs(t, err, errNoExtractor)
			assert.Contains(t, err.Error(), c.why)
			assert.NotEmpty(t, clierr.Hint(err))
			assert.Nil(t, e.manifest(t))
			err = Walk(context.Background(), e.eng, e.volume, e.image, e.labels, func(File) error { return nil })
			assert.True(t, errors.Is(err, errNoRoot), "the volume is untouched: %v", err)

			var rec progress.Recorder
			o = e.opts(zp)
			o.Reporter = &rec
			res, err := Run(context.Background(), e.eng, o)
			require.NoError(t, err)
			assert.Equal(t, MethodArchive, res.Method)
			assert.Equal(t, want, e.listBack(t))
			var notes []string
			for _, ev := range rec.Events() {
				if ev.Kind == progress.Info {
					notes = append(notes, ev.Message)
				}
			}
			assert.Contains(t, strings.Join(notes, "\n"), "archive API", "the fallback is said")
		})
	}
}

// A binary whose main never called ExtractorMain is not run as the
// extractor (it would run its own main in the container).
func TestLoadWithoutExtractorMainStreams(t *testing.T) {
	selfExtractor.Store(false)
	defer selfExtractor.Store(true)
	e := newEnv(t)
	files, want := dataset("", small(), zip.Store)
	res, err := Run(context.Background(), e.eng, e.opts(writeZip(t, e.dir, "food11.zip", files)))
	require.NoError(t, err)
	assert.Equal(t, MethodArchive, res.Method)
	assert.Equal(t, want, e.listBack(t))
}
