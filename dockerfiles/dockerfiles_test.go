package dockerfiles

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/images"
)

func TestRefIsContentAddressed(t *testing.T) {
	a, err := Ref(RayCUDA, "2.54.0")
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^mltrain/ray-cuda:2\.54\.0-[0-9a-f]{12}$`), a)
	b, err := Ref(RayCUDA, "2.53.0")
	require.NoError(t, err)
	assert.NotEqual(t, a[len(a)-12:], b[len(b)-12:], "the Ray version is part of the hash")
	_, err = Ref("nope", "2.54.0")
	assert.ErrorContains(t, err, `"nope"`)
	assert.Len(t, names(), len(Kinds))
}

// Every FROM of every embedded Dockerfile, every image-like ARG default and
// every image the package names must carry an explicit tag that is not latest.
func TestEveryImageIsPinned(t *testing.T) {
	checked := 0
	for _, k := range Kinds {
		df, err := Dockerfile(k)
		require.NoError(t, err)
		bases, err := images.BaseImages(df, BuildArgs(k, DefaultRayVersion))
		require.NoError(t, err, k)
		require.NotEmpty(t, bases, "%s has no FROM", k)
		for _, b := range bases {
			assert.NoError(t, images.CheckPinned(b), "%s: FROM %s", k, b)
			checked++
		}
		for name, defs := range images.ArgDefaults(df) {
			for _, d := range defs {
				if strings.Contains(d, "/") && !strings.Contains(d, "://") {
					assert.NoError(t, images.CheckPinned(d), "%s: ARG %s=%s", k, name, d)
					checked++
				}
			}
		}
	}
	assert.NoError(t, images.CheckPinned(RayImage(DefaultRayVersion)))
	assert.GreaterOrEqual(t, checked, len(Kinds)+1, "the Jupyter base ARG is an image default too")
}

// Ray and Python must agree across the images: each Dockerfile's defaults
// equal the package's, and the worker bases carry the lab's Python tag.
func TestVersionsAgreeAcrossDockerfiles(t *testing.T) {
	for _, k := range Kinds {
		df, err := Dockerfile(k)
		require.NoError(t, err)
		args := images.ArgDefaults(df)
		for _, v := range args["RAY_VERSION"] {
			assert.Equal(t, DefaultRayVersion, v, "%s RAY_VERSION default", k)
		}
		require.NotEmpty(t, args["PYTHON_VERSION"], "%s declares PYTHON_VERSION", k)
		for _, v := range args["PYTHON_VERSION"] {
			assert.Equal(t, PythonVersion, v, "%s PYTHON_VERSION default", k)
		}
		assert.Contains(t, string(df), `mltrain.python.version="${PYTHON_VERSION}"`, k)
		assert.Contains(t, string(df), `mltrain.ray.version="${RAY_VERSION}"`, k)
		if k != JupyterRay {
			bases, err := images.BaseImages(df, BuildArgs(k, DefaultRayVersion))
			require.NoError(t, err)
			assert.Contains(t, bases[0], "-"+PythonTag(), "%s base must pin the lab's Python", k)
		}
	}
	assert.Equal(t, "rayproject/ray:2.54.0-py312", RayImage("2.54.0"))
}
