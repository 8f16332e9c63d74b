package compose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// Two networks named <project>_default, as two racing applies of an older
// mltrain left them: the engine calls the name ambiguous. Apply keeps one
// and removes the lab's empty duplicate; another tool's network of that
// name is named with the docker command that removes it; down removes the
// lab's by ID.
func TestDuplicateNetworksAreHealedOrNamed(t *testing.T) {
	eng := dockertest.Engine(t)
	img := dockertest.SleeperImage(t, eng)
	name := dockertest.UniqueName(t, "mlt")
	cleanupProject(t, eng, name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	project := loadYAML(t, name, fmt.Sprintf("services:\n  app:\n    image: %s\n    container_name: %s-app\n", img, name))
	net := name + "_default"
	ours := map[string]string{labels.Project: name, labels.Network: "default"}
	older := dockertest.CreateNetwork(t, net, ours)
	dockertest.CreateNetwork(t, net, ours)

	var rec progress.Recorder
	_, err := Apply(ctx, eng, project, ApplyOptions{Reporter: &rec, StopTimeout: time.Second})
	require.NoError(t, err, "the lab's empty duplicate is removed, not an ambiguous name")
	nets, err := eng.NetworkList(ctx, net, nil)
	require.NoError(t, err)
	require.Len(t, nets, 1)
	assert.Equal(t, older, nets[0].ID, "the oldest is kept")
	assert.Equal(t, []string{name + "-app"}, nets[0].Containers)
	said := false
	for _, e := range rec.Events() {
		said = said || strings.Contains(e.Message, "an empty duplicate of this lab's")
	}
	assert.True(t, said, "the removal is said")

	foreign := dockertest.CreateNetwork(t, net, nil)
	_, err = Apply(ctx, eng, project, ApplyOptions{StopTimeout: time.Second})
	var dup *DuplicateNetworkError
	require.True(t, errors.As(err, &dup), "got %v", err)
	assert.Contains(t, err.Error(), docker.ShortID(foreign)+" (not made by this lab)")
	assert.Equal(t, "remove the extra networks: 'docker network rm "+docker.ShortID(foreign)+"', then run the command again", clierr.Hint(err))
	nets, err = eng.NetworkList(ctx, net, nil)
	require.NoError(t, err)
	assert.Len(t, nets, 2, "another tool's network is never removed")

	dockertest.CreateNetwork(t, net, ours) // a second copy of the lab's again
	_, err = Down(ctx, eng, name, time.Second, false, nil)
	require.NoError(t, err, "down removes the lab's networks by ID")
	nets, err = eng.NetworkList(ctx, net, nil)
	require.NoError(t, err)
	require.Len(t, nets, 1)
	assert.Equal(t, foreign, nets[0].ID, "only the other tool's is left")
}
