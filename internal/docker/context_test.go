package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolveHost(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")

	h, err := ResolveHost()
	require.NoError(t, err)
	assert.Equal(t, "", h, "no config: SDK default")

	sum := sha256.Sum256([]byte("lab"))
	metaDir := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	require.NoError(t, os.MkdirAll(metaDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(metaDir, "meta.json"),
		[]byte(`{"Name":"lab","Endpoints":{"docker":{"Host":"unix:///run/lab.sock"}}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"lab"}`), 0o644))

	h, err = ResolveHost()
	require.NoError(t, err)
	assert.Equal(t, "unix:///run/lab.sock", h)

	t.Setenv("DOCKER_CONTEXT", "missing")
	_, err = ResolveHost()
	assert.ErrorContains(t, err, `docker context "missing"`)

	t.Setenv("DOCKER_HOST", "tcp://10.1.2.3:2375")
	h, err = ResolveHost()
	require.NoError(t, err)
	assert.Equal(t, "tcp://10.1.2.3:2375", h)
}

// ResolveEndpoint says what chose the engine, for the hint of a dead one.
func TestResolveEndpointNamesItsSource(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	e, err := ResolveEndpoint()
	require.NoError(t, err)
	assert.Equal(t, Endpoint{}, e, "nothing set: the default socket")

	sum := sha256.Sum256([]byte("remote"))
	metaDir := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	require.NoError(t, os.MkdirAll(metaDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(metaDir, "meta.json"),
		[]byte(`{"Name":"remote","Endpoints":{"docker":{"Host":"tcp://10.9.9.9:2376"}}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"remote"}`), 0o644))
	e, err = ResolveEndpoint()
	require.NoError(t, err)
	assert.Equal(t, Endpoint{Host: "tcp://10.9.9.9:2376", Source: SourceConfig, Context: "remote"}, e)

	t.Setenv("DOCKER_CONTEXT", "default")
	e, err = ResolveEndpoint()
	require.NoError(t, err)
	assert.Equal(t, Endpoint{}, e, "DOCKER_CONTEXT=default is the default socket")

	t.Setenv("DOCKER_CONTEXT", "gone")
	e, err = ResolveEndpoint()
	require.Error(t, err)
	assert.Equal(t, Endpoint{Source: SourceEnvCtx, Context: "gone"}, e, "an unreadable context is still named")

	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	e, err = ResolveEndpoint()
	require.NoError(t, err)
	assert.Equal(t, Endpoint{Host: "unix:///nonexistent.sock", Source: SourceEnvHost}, e)
}
