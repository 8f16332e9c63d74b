package fake

import (
	"context"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
)

func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.Images["x"] = docker.Image{ID: "sha256:x"}
	spec := docker.ContainerSpec{Name: "ray-head", Config: &container.Config{Image: "x", Labels: map[string]string{"p": "lab"}}}
	id, err := f.ContainerCreate(ctx, spec)
	require.NoError(t, err)
	_, err = f.ContainerCreate(ctx, spec)
	assert.True(t, docker.IsConflict(err), "name in use: %v", err)
	require.NoError(t, f.ContainerStart(ctx, id))
	d, err := f.ContainerInspect(ctx, "ray-head")
	require.NoError(t, err)
	assert.True(t, d.Running)
	l, _ := f.ContainerList(ctx, map[string]string{"p": "lab"})
	assert.Len(t, l, 1)
	l, _ = f.ContainerList(ctx, map[string]string{"p": "other"})
	assert.Len(t, l, 0)
	require.NoError(t, f.ContainerRemove(ctx, "ray-head", true))
	_, err = f.ContainerInspect(ctx, "ray-head")
	assert.True(t, docker.IsNotFound(err))
	assert.Equal(t, []string{"ray-head"}, f.CallsOf("start"))
}

// The rest of the fake's behaviour is held to the real engine's by
// TestEngineContract in package docker.
