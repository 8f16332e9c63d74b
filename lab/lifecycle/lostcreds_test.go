package lifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/nextstep"
	labrender "github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/state"
)

// An up over volumes whose credentials are gone is refused, and its next
// steps act on the user's lab, flags and all.
func TestLostCredentialsRefusalNamesTheUsersLab(t *testing.T) {
	eng := fake.New()
	eng.Volumes["lab2_minio-data"] = docker.Volume{Name: "lab2_minio-data",
		Labels: map[string]string{labels.Project: "lab2", labels.Volume: labrender.VolumeMinIO}}
	dir := state.Dir(t.TempDir())
	err := refuseLostCredentials(context.Background(), eng, dir, "lab2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lab2_minio-data")
	c := nextstep.Commands{Lab: state.Lab{Project: "lab2", StateDir: dir.Path()}}
	line := "mltrain --project lab2 --state-dir " + dir.Path()
	assert.Equal(t, "restore "+dir.File(state.CredentialsFile)+" from a backup and run '"+line+" up' again, or start over with new credentials: '"+
		line+" down --volumes' (removes MinIO's checkpoints and Grafana's data), then '"+line+" up'", c.Hint(err))

	assert.NoError(t, refuseLostCredentials(context.Background(), eng, dir, "other"), "another lab's volumes are not this one's")
}
