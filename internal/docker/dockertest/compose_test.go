package dockertest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestComposeV5Config proves the built binary is the pinned Compose and
// that its `config` both accepts a valid file and rejects a broken one.
func TestComposeV5Config(t *testing.T) {
	bin := ComposeV5(t)
	out, err := Compose(t, bin, "version")
	require.NoError(t, err, out)
	_, ver, _ := strings.Cut(ComposeModule, "@")
	assert.Contains(t, out, "Docker Compose version "+ver)

	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("services:\n  web:\n    image: example/web:1\n    ports: [\"8080:80\"]\n    environment: {A: \"${A_VALUE:-x}\"}\n"), 0o644))
	out, err = Compose(t, bin, "-f", good, "-p", "cfgtest", "config", "--format", "json")
	require.NoError(t, err, out)
	var cfg struct {
		Services map[string]struct {
			Image       string
			Environment map[string]string
			Ports       []struct{ Target, Published any }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &cfg), out)
	assert.Equal(t, "example/web:1", cfg.Services["web"].Image)
	assert.Equal(t, "x", cfg.Services["web"].Environment["A"], "interpolation ran")
	require.Len(t, cfg.Services["web"].Ports, 1)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("services:\n  web:\n    image: example/web:1\n    imagee: typo\n"), 0o644))
	out, err = Compose(t, bin, "-f", bad, "-p", "cfgtest", "config")
	require.Error(t, err, "a key the compose schema does not have must be refused:\n%s", out)
	assert.Contains(t, out, "services.web.imagee")
}

// TestComposeV5UpPsDown runs a one-service project on the real engine, so a
// Compose that cannot talk to this engine's API version fails here.
func TestComposeV5UpPsDown(t *testing.T) {
	eng := Engine(t)
	bin := ComposeV5(t)
	img := GoImage(t, eng, "mltrain-test/sleeper:dev", "./testdata/sleeper", nil)
	project := UniqueName(t, "cv5")
	file := filepath.Join(t.TempDir(), "compose.yaml")
	require.NoError(t, os.WriteFile(file, []byte("services:\n  app:\n    image: "+img+"\n    labels: {"+TestLabel+": \"1\"}\n"), 0o644))
	t.Cleanup(func() { _, _ = Compose(t, bin, "-f", file, "-p", project, "down", "--timeout", "1") })

	out, err := Compose(t, bin, "-f", file, "-p", project, "up", "-d")
	require.NoError(t, err, out)
	out, err = Compose(t, bin, "-f", file, "-p", project, "ps", "--format", "json")
	require.NoError(t, err, out)
	assert.Contains(t, out, `"State":"running"`)
	assert.Contains(t, out, project+"-app-1")
	cs, err := eng.ContainerList(context.Background(), map[string]string{"com.docker.compose.project": project})
	require.NoError(t, err)
	require.Len(t, cs, 1, "the engine sees the container compose made")

	out, err = Compose(t, bin, "-f", file, "-p", project, "down", "--timeout", "1")
	require.NoError(t, err, out)
	cs, err = eng.ContainerList(context.Background(), map[string]string{"com.docker.compose.project": project})
	require.NoError(t, err)
	assert.Empty(t, cs, "down removed it")
}

// Parallel users of the cache build a tool once; the build writes elsewhere
// than the final path, so a half-built binary is never found there.
func TestCachedBinaryBuildsOnce(t *testing.T) {
	t.Setenv("MLTRAIN_TEST_CACHE", t.TempDir())
	var builds atomic.Int32
	build := func(tmp string) error {
		builds.Add(1)
		if _, err := os.Stat(filepath.Join(CacheDir(), "tool-1", "tool")); err == nil {
			return errors.New("the final path exists before the build finished")
		}
		time.Sleep(200 * time.Millisecond)
		return os.WriteFile(tmp, []byte("#!/bin/sh\n"), 0o755)
	}
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i] = CachedBinary(t, filepath.Join("tool-1", "tool"), "tool", build)
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), builds.Load())
	for _, p := range paths {
		assert.Equal(t, filepath.Join(CacheDir(), "tool-1", "tool"), p)
		assert.FileExists(t, p)
	}
	leftovers, _ := filepath.Glob(filepath.Join(CacheDir(), "tool-1", "*.tmp*"))
	assert.Empty(t, leftovers)
}
