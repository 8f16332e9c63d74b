package dockerfiles

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// The embedded Dockerfiles, built for real over stand-in bases whose
// /bin/sh only echoes: every instruction runs through the engine's builder,
// so ARG scoping, the version checks' arguments, the pinned packages and the
// labels are checked without a registry.
func TestEmbeddedDockerfilesBuildOverStandInBases(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ver := fmt.Sprintf("0.0.%d", os.Getpid())
	sh := dockertest.UniqueName(t, "mltrain-test-fakesh") + ":1"
	dockertest.GoImage(t, eng, sh, "./testdata/fakesh", map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nray:x:1000:100::/home/ray:/bin/sh\n",
		"/etc/group":  "root:x:0:\nusers:x:100:\n",
	})
	t.Cleanup(func() { _ = eng.ImageRemove(context.Background(), sh) })
	jupyterBase := dockertest.UniqueName(t, "mltrain-test-notebook") + ":2025-03-14"
	bases := []string{"rayproject/ray:" + ver + "-py312-gpu", "rayproject/ray:" + ver + "-py312", jupyterBase}
	for _, b := range bases {
		_, err := eng.ImageInspect(ctx, b)
		require.True(t, docker.IsNotFound(err), "%s must not exist before the test: %v", b, err)
	}
	_, err := eng.ImageBuild(ctx, docker.BuildOptions{
		Context: dockertest.TarOf(map[string][]byte{"Dockerfile": []byte("FROM " + sh + "\nCOPY --from=" + sh + " /app /bin/sh\n")}),
		Tags:    bases, Labels: map[string]string{dockertest.TestLabel: "1"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, b := range bases {
			_ = eng.ImageRemove(context.Background(), b)
		}
	})

	want := map[Kind][]string{
		RayCUDA: {
			"assert v == '3.12'", "ray.__version__ == '" + ver + "'",
			`--index-url "https://download.pytorch.org/whl/cu128" "torch==2.10.0" "torchvision==0.25.0"`,
			`"lightning>=2.5,<3" "boto3>=1.35,<2" "s3fs>=2024.6.0"`,
		},
		RayROCm: {
			"assert v == '3.12'", "ray.__version__ == '" + ver + "'",
			// the fake shell leaves ${VERSION_CODENAME} (read from /etc/os-release) empty
			`wget -q "https://repo.radeon.com/amdgpu-install/7.0.1/ubuntu//amdgpu-install_7.0.1.70001-1_all.deb"`,
			"USER ray",
			"amdgpu-install -y --usecase=rocm --no-dkms",
			`--index-url "https://download.pytorch.org/whl/rocm7.0" "torch==2.10.0" "torchvision==0.25.0"`,
			`"lightning>=2.5,<3" "boto3>=1.35,<2" "s3fs>=2024.6.0"`,
		},
		JupyterRay: {
			"assert v == '3.12'",
			`"ray[default]==` + ver + `"`, `"lightning>=2.5,<3"`, "fix-permissions",
		},
	}
	for _, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			df, err := Dockerfile(k)
			require.NoError(t, err)
			s := images.NewSpec(dockertest.UniqueName(t, "mltrain-test"), ver, df)
			s.Kind = string(k)
			s.Labels = map[string]string{dockertest.TestLabel: "1"}
			if k == JupyterRay {
				s.BuildArgs["JUPYTER_BASE"] = jupyterBase
			}
			t.Cleanup(func() { _ = eng.ImageRemove(context.Background(), s.Ref) })
			got, err := images.Bases(s)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Contains(t, bases, got[0], "the FROM resolves to the stand-in with the build args")

			var rec progress.Recorder
			res, err := images.Build(ctx, eng, s, false, &rec)
			require.NoError(t, err)
			assert.True(t, res.Built)
			var out strings.Builder
			for _, e := range rec.Events() {
				if e.Kind == progress.Update {
					// continuation lines join with runs of spaces; compare words
					out.WriteString(strings.Join(strings.Fields(e.Message), " ") + "\n")
				}
			}
			for _, w := range want[k] {
				assert.Contains(t, out.String(), w)
			}
			img, err := eng.ImageInspect(ctx, s.Ref)
			require.NoError(t, err)
			assert.Equal(t, ver, img.Labels[labels.ImageRayVersion])
			assert.Equal(t, PythonVersion, img.Labels[labels.ImagePythonVersion])
			assert.Equal(t, s.Hash, img.Labels[labels.ImageHash])
			assert.Equal(t, string(k), img.Labels[labels.ImageKind])
		})
	}
}
