package dockerfiles

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/images"
)

func TestLabSpecsFollowTheVendor(t *testing.T) {
	for vendor, worker := range map[string]Kind{"nvidia": RayCUDA, "amd": RayROCm, "": RayCUDA} {
		specs, err := Specs(vendor, "2.54.0")
		require.NoError(t, err)
		require.Len(t, specs, 2)
		assert.Equal(t, string(worker), specs[0].Kind, vendor)
		assert.Equal(t, images.RoleWorker, specs[0].Role)
		assert.Equal(t, string(JupyterRay), specs[1].Kind)
		assert.Equal(t, images.RoleJupyter, specs[1].Role)
		ref, err := Ref(worker, "2.54.0")
		require.NoError(t, err)
		assert.Equal(t, ref, specs[0].Ref, "the ref other packages compute is the one built")
	}
	s, err := Spec(RayROCm, "2.54.0")
	require.NoError(t, err)
	bases, err := images.Bases(s)
	require.NoError(t, err)
	assert.Equal(t, []string{"rayproject/ray:2.54.0-py312"}, bases)

	refs, err := SaveRefs("2.54.0", []string{"minio/minio:RELEASE.2025-09-07T16-13-09Z"})
	require.NoError(t, err)
	assert.Contains(t, refs, "rayproject/ray:2.54.0-py312-gpu")
	assert.Contains(t, refs, "quay.io/jupyter/pytorch-notebook:2025-03-14")
	assert.Contains(t, refs, "minio/minio:RELEASE.2025-09-07T16-13-09Z")
	assert.Contains(t, refs, specs0Ref(t, JupyterRay))
	assert.Len(t, refs, 7, "head (= rocm base), cuda base, jupyter base, 3 built, minio: %v", refs)
}

func specs0Ref(t *testing.T, k Kind) string {
	r, err := Ref(k, "2.54.0")
	require.NoError(t, err)
	return r
}

func TestRequestForSplitsBuildsFromPulls(t *testing.T) {
	cuda, err := Ref(RayCUDA, "2.54.0")
	require.NoError(t, err)
	jup, err := Ref(JupyterRay, "2.54.0")
	require.NoError(t, err)
	old, err := Ref(RayCUDA, "2.53.0")
	require.NoError(t, err)
	req, err := Request("2.54.0", []string{"rayproject/ray:2.54.0-py312", cuda, cuda, jup, "minio/minio:RELEASE.2025-09-07T16-13-09Z", old})
	require.NoError(t, err)
	assert.Equal(t, []string{"rayproject/ray:2.54.0-py312", "minio/minio:RELEASE.2025-09-07T16-13-09Z", old}, req.Pull,
		"a build for another Ray version is not ours to build: it must come from elsewhere")
	require.Len(t, req.Build, 2)
	assert.Equal(t, cuda, req.Build[0].Ref)
	assert.Equal(t, string(JupyterRay), req.Build[1].Kind)
}
