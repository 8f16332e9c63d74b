package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
)

// Issue 24 item 2: up --data food11 loads the dataset while the images
// come, in one command; a refused zip stops up before anything starts and
// says what was kept.
func TestUpLoadsTheDatasetAlongsideTheImages(t *testing.T) {
	s := newStandin(t)
	bad := filepath.Join(t.TempDir(), "food11.zip")
	require.NoError(t, os.WriteFile(bad, []byte("not a zip"), 0o644))
	_, errOut, code := runBin(t, binRun{args: s.upArgs("--data", "food11", "--data-zip", bad), env: s.env})
	require.Equal(t, 1, code, errOut)
	errText, next := nextLines(errOut)
	assert.Contains(t, errText, "dataset volume "+s.opts.DataVolume)
	assert.Contains(t, errText, "is not a zip file")
	assert.Contains(t, errText, "in place and kept", "says what the images step kept")
	assert.Contains(t, next, "check the zip file you gave")
	assert.Empty(t, s.containers(t), "nothing started")

	zip := food11Zip(t, "food11-updata.zip", map[string]int{"training": 22, "validation": 11, "evaluation": 11}, "", 0)
	_, errOut, code = runBin(t, binRun{args: s.upArgs("--data", "food11", "--data-zip", zip), env: s.env})
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `✓ images: .*; Food-11 loaded into `+s.opts.DataVolume, errOut)
	assert.Contains(t, errOut, "load food11-updata.zip into volume "+s.opts.DataVolume, "the load's own progress shows beside the images'")
	m, err := food11.ReadManifest(context.Background(), s.eng, food11.VerifyOptions{Volume: s.opts.DataVolume})
	require.NoError(t, err)
	require.NotNil(t, m, "the volume holds the dataset")
	assert.Equal(t, 44, m.Files)
}
