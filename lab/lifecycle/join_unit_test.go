package lifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/plan"
)

func TestJoinRefusesAWorkerImageOfAnotherRayAndWarnsOfAnUnlabelledOne(t *testing.T) {
	eng := fake.New()
	eng.Images["other"] = docker.Image{Labels: map[string]string{labels.ImageRayVersion: "2.53.0", labels.ImagePythonVersion: "3.12"}}
	eng.Images["same"] = docker.Image{Labels: map[string]string{labels.ImageRayVersion: "2.54.0", labels.ImagePythonVersion: "3.12"}}
	eng.Images["bare"] = docker.Image{}
	b := plan.JoinBundle{RayVersion: "2.54.0", Python: "3.12"}
	ctx := context.Background()

	err := checkImageVersions(ctx, eng, "other", b, &progress.Recorder{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker image other has Ray 2.53.0, the lab runs Ray 2.54.0")

	rec := &progress.Recorder{}
	require.NoError(t, checkImageVersions(ctx, eng, "same", b, rec))
	assert.Empty(t, rec.Events(), "matching versions say nothing")

	rec = &progress.Recorder{}
	require.NoError(t, checkImageVersions(ctx, eng, "bare", b, rec), "an unlabelled image is warned of, not refused")
	require.Len(t, rec.Events(), 2)
	assert.Contains(t, rec.Events()[0].Message, "does not say its Ray version")
	assert.Contains(t, rec.Events()[1].Message, "Ray will refuse its nodes if it is not 3.12")
}
