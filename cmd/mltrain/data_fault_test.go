package main

import (
	"context"
	"testing"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// Issue 21 item 3: a load that fills the volume's own disk names that
// filesystem, and the next command carries every flag the user gave.
func TestDataFullDiskNamesTheVolumesFilesystemAndTheWholeRerun(t *testing.T) {
	eng := dockertest.Engine(t)
	vol := testVolume(t, eng)
	c, err := client.New(client.FromEnv)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.VolumeCreate(context.Background(), client.VolumeCreateOptions{Name: vol, Driver: "local",
		DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m"}})
	require.NoError(t, err)
	zip := food11Zip(t, "food11-small.zip", map[string]int{"training": 300, "validation": 100, "evaluation": 100}, "", 0)
	state := t.TempDir()
	args := []string{"--state-dir", state, "data", "food11", "--zip", zip, "--volume", vol}
	_, stderr, code := runBin(t, binRun{args: args})
	require.Equal(t, 1, code, stderr)
	errText, next := nextLines(stderr)
	assert.Contains(t, errText, "dataset volume "+vol+" is out of space")
	assert.Contains(t, errText, "o=size=1m", "the full filesystem is the volume's own")
	assert.Contains(t, next, "free space on that filesystem")
	assert.Contains(t, next, "'mltrain --state-dir "+state+" data food11 --volume "+vol+" --zip "+zip+"'", "the re-run keeps every flag")
}
