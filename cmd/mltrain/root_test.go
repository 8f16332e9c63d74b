package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

// run executes the CLI in-process and returns stdout, stderr and the exit code
// main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), clierr.Code(err)
}

func TestEveryVerbIsRegistered(t *testing.T) {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	for _, verb := range []string{"up", "down", "status", "logs", "gpus", "doctor", "render", "build", "data", "lab", "verify", "version", "worker", "images"} {
		cmd, _, err := root.Find([]string{verb})
		require.NoError(t, err, verb)
		assert.Equal(t, verb, cmd.Name())
	}
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version", "--json")
	assert.Equal(t, 0, code)
	assert.JSONEq(t, `{"version":"dev"}`, out)
}
