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
