package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

// status exits non-zero when a planned service is not running, whatever
// its container's state: only created, exited, paused or missing, as text
// and as JSON; a lab whose services all run exits 0.
func TestStatusFailsForAPlannedServiceNotRunning(t *testing.T) {
	s := newStatusLab(t)
	s.saveState(t)
	out, err := s.status(t)
	require.NoError(t, err, "every planned service runs:\n%s", out)

	minio := s.container(t, service.MinIOService)
	for _, state := range []string{"created", "exited", "paused", "restarting"} {
		t.Run(state, func(t *testing.T) {
			c := s.eng.Containers[minio]
			c.State, c.Running = state, state == "paused" || state == "restarting" // as the engine reports them
			out, err := s.status(t)
			t.Logf("status:\n%s", out)
			require.Error(t, err)
			assert.Equal(t, 1, clierr.Code(err))
			assert.ErrorIs(t, err, status.ErrServicesDown)
			assert.Contains(t, err.Error(), "1 planned service(s) not running: minio ("+state+")")
			assert.Equal(t, "run 'mltrain --project "+statusProject+" --state-dir "+s.dir.Path()+" up' to start them", clierr.Hint(err), "written for this lab")
			assert.Regexp(t, `minio +stat-minio +`+state, out)

			out, err = s.status(t, "--json")
			require.Error(t, err)
			assert.ErrorIs(t, err, status.ErrServicesDown)
			var st status.Status
			require.NoError(t, json.Unmarshal([]byte(out), &st), out)
			assert.Equal(t, []string{service.MinIOService}, st.NotRunning)
		})
	}

	// Missing and stopped together: one error names both.
	require.NoError(t, s.eng.ContainerRemove(context.Background(), s.container(t, service.GrafanaService), true))
	_, err = s.status(t)
	require.Error(t, err)
	assert.ErrorIs(t, err, status.ErrMissingServices)
	assert.ErrorIs(t, err, status.ErrServicesDown)
	assert.Contains(t, err.Error(), "have no container: grafana")
	assert.Contains(t, err.Error(), "not running: minio (restarting)")
	assert.Equal(t, "run 'mltrain --project "+statusProject+" --state-dir "+s.dir.Path()+" up' to create and start them", clierr.Hint(err))
}
