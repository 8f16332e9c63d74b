package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/images"
)

func TestBuildAndImagesUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--vendor", "tpu"}, `--vendor "tpu"`},
		{[]string{"build", "--pull", "sometimes"}, `--pull "sometimes"`},
		{[]string{"build", "--vendor", "cpu", "--ray-version", "2.54"}, `--ray-version "2.54"`},
		{[]string{"images", "save"}, "needs the FILE"},
		{[]string{"images", "load"}, "exactly one FILE"},
		{[]string{"images", "save", "x.tar", "--ray-version", "latest"}, `--ray-version "latest"`},
	} {
		_, _, err := runCLI(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
		assert.Equal(t, clierr.ExitUsage, clierr.Code(err), "usage errors exit 2: %v", tc.args)
		assert.NotEmpty(t, clierr.Hint(err), tc.args)
	}
}

// Here no base image is present and none may be pulled: the error names
// each base the vendor's build needs.
func TestBuildPullNeverNamesTheMissingBases(t *testing.T) {
	dockertest.Engine(t)
	for vendor, bases := range map[string][]string{
		"cpu": {"rayproject/ray:2.54.0-py312-gpu", "quay.io/jupyter/pytorch-notebook:2025-03-14"},
		"amd": {"rayproject/ray:2.54.0-py312", "quay.io/jupyter/pytorch-notebook:2025-03-14"},
	} {
		_, _, err := runCLI(t, "build", "--vendor", vendor, "--pull", "never")
		require.Error(t, err, vendor)
		for _, b := range bases {
			assert.Contains(t, err.Error(), b, vendor)
		}
		assert.Contains(t, clierr.Hint(err), "mltrain images load", "how to preload them: said once, in the hint")
		assert.Contains(t, clierr.Hint(err), "--pull missing")
		assert.Equal(t, clierr.ExitFailure, clierr.Code(err))
	}
}

func TestImagesSaveThenLoadThroughTheCLI(t *testing.T) {
	eng := dockertest.Engine(t)
	ctx := context.Background()
	s := images.NewSpec(dockertest.UniqueName(t, "mltrain-test"), "0.0.0", []byte("FROM scratch\nCOPY Dockerfile /Dockerfile\n"))
	s.Labels = map[string]string{dockertest.TestLabel: "1"}
	t.Cleanup(func() { _ = eng.ImageRemove(context.Background(), s.Ref) })
	_, err := images.Ensure(ctx, eng, images.Request{Build: []images.Spec{s}}, images.Options{}, nil)
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "lab.tar")
	out, _, err := runCLI(t, "images", "save", file, s.Ref, "--json")
	require.NoError(t, err)
	var res images.SaveResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, []string{s.Ref}, res.Saved, "only the images present are saved")
	assert.Contains(t, res.Missing, "rayproject/ray:2.54.0-py312", "the lab's images are candidates")
	assert.Contains(t, res.Missing, "minio/minio:RELEASE.2025-09-07T16-13-09Z")

	require.NoError(t, eng.ImageRemove(ctx, s.Ref))
	out, _, err = runCLI(t, "images", "load", file)
	require.NoError(t, err)
	assert.Contains(t, out, "Loaded 1 images")
	assert.Contains(t, out, s.Ref)
	_, err = eng.ImageInspect(ctx, s.Ref)
	assert.NoError(t, err)
}

func TestImagesLoadCorruptFile(t *testing.T) {
	dockertest.Engine(t)
	file := filepath.Join(t.TempDir(), "broken.tar")
	require.NoError(t, os.WriteFile(file, []byte("definitely not a tar"), 0o600))
	_, _, err := runCLI(t, "images", "load", file)
	require.Error(t, err)
	assert.Contains(t, err.Error(), file)
	assert.Contains(t, err.Error(), "not a complete image archive")
	assert.Equal(t, clierr.ExitFailure, clierr.Code(err))
	assert.Contains(t, clierr.Hint(err), "mltrain images save")
}
