package compose

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// A container whose restart policy brings it back after it fails is
// "restarting", never "exited": apply still fails fast on it, with its exit
// code and logs, instead of waiting out the health timeout.
func TestApplyFailsFastWhenARestartingDependencyExits(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p := sleeperProject(t, name, img, "a", "200ms")
	db := p.Services["db"]
	db.Restart = types.RestartPolicyOnFailure
	p.Services["db"] = db
	start := time.Now()
	_, err := Apply(ctx, eng, p, ApplyOptions{StopTimeout: time.Second, HealthTimeout: time.Minute})
	require.Error(t, err)
	var cf *ContainerFailure
	require.True(t, errors.As(err, &cf), "error is a container failure: %v", err)
	assert.Equal(t, name+"-db", cf.Container)
	assert.Contains(t, cf.Reason, "exited with code 3")
	assert.Contains(t, cf.Logs, "sleeper exiting with 3")
	assert.Less(t, time.Since(start), 50*time.Second, "failed fast, long before the health timeout") // sanity bound, not a benchmark
}
