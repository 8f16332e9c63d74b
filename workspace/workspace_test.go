package workspace_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/workspace"
)

func TestEnsureWritesOnceAndKeepsEdits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	written, err := workspace.Ensure(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "food11_model.py", "lab_events.py", "ray_modes.py", "requirements.txt", "runtime.json", "train.py"}, written)

	edited := []byte("print('my version')\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), edited, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "README.md")))
	written, err = workspace.Ensure(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md"}, written, "only the missing file comes back")
	got, err := os.ReadFile(filepath.Join(dir, "train.py"))
	require.NoError(t, err)
	assert.Equal(t, edited, got, "a student's edit is never overwritten")
}

func TestRuntimeEnvPointsAtRealFiles(t *testing.T) {
	b, err := workspace.File("runtime.json")
	require.NoError(t, err)
	var env struct {
		Pip     string            `json:"pip"`
		EnvVars map[string]string `json:"env_vars"`
	}
	require.NoError(t, json.Unmarshal(b, &env))
	_, err = workspace.File(env.Pip)
	require.NoError(t, err, "runtime.json's pip file is part of the workspace")
	assert.Equal(t, "/mnt/Food-11", env.EnvVars["FOOD11_DATA_DIR"], "workers mount the food11 volume at /mnt")
}

func TestTrainPyCompiles(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed; the Makefile's py-check covers CI")
	}
	dir := t.TempDir()
	_, err = workspace.Ensure(dir)
	require.NoError(t, err)
	for _, f := range []string{"train.py", "lab_events.py", "food11_model.py", "ray_modes.py"} {
		out, err := exec.Command(py, "-m", "py_compile", filepath.Join(dir, f)).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	// train.py's modules import from the workspace alone: it loads, and
	// parses its flags, without Ray, Lightning or torch.
	cmd := exec.Command(py, "train.py", "--help")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "--mode")
	// The flags the exercises pass must exist in the script's parser.
	src, err := workspace.File("train.py")
	require.NoError(t, err)
	for _, flag := range []string{"--mode", "--workers", "--gpu-fraction", "--cpus-per-worker", "--max-failures",
		"--epochs", "--quick", "--num-samples", "--run-name", "--fake-data", "--no-pretrained", "--keep-checkpoints"} {
		assert.True(t, strings.Contains(string(src), `"`+flag+`"`), flag)
	}
}
