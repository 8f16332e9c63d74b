package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

func TestDataFood11UsageErrors(t *testing.T) {
	_, _, code := run(t, "data")
	assert.Equal(t, 2, code, "data without a dataset name is a usage error")

	_, _, code = run(t, "data", "food11", "--url", "http://x/z.zip", "--zip", "z.zip")
	assert.NotEqual(t, 0, code, "--url and --zip together are refused")

	_, _, code = run(t, "data", "food11", "extra-arg")
	assert.NotEqual(t, 0, code)
}

// Issues 31 and 32, item 4: a zip that lacks a whole class is refused
// unless --allow-missing-classes, and the next step names both ways on with
// the user's zip, volume and lab.
func TestDataFood11RefusesAMissingClassNamingTheWaysOn(t *testing.T) {
	eng := dockertest.Engine(t)
	vol := testVolume(t, eng)
	zip := food11Zip(t, "food11-no-class.zip", map[string]int{"training": 22, "validation": 11, "evaluation": 11}, "validation", 10)
	state := t.TempDir()
	args := []string{"--state-dir", state, "data", "food11", "--zip", zip, "--volume", vol}
	_, stderr, code := runBin(t, binRun{args: args})
	require.Equal(t, 1, code, stderr)
	errText, next := nextLines(stderr)
	assert.Contains(t, errText, "food11-no-class.zip lacks whole classes: validation/class_10 has no images")
	lab := "mltrain --state-dir " + state + " data food11 "
	assert.Equal(t, "load the course's zip with '"+lab+"--volume "+vol+"', or this one anyway with '"+lab+"--zip "+zip+" --volume "+vol+" --allow-missing-classes'", next)

	stdout, stderr, code := runBin(t, binRun{args: append(args, "--allow-missing-classes")})
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "validation/class_10 is empty")
	assert.Contains(t, stdout, "volume "+vol+" loaded")
}
