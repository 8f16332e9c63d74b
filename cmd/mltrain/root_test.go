package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

// runCLI executes the CLI in-process (bounded by a few minutes) and returns
// stdout, stderr and the error main would print.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// run is runCLI with the exit code main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	out, errOut, err := runCLI(t, args...)
	return out, errOut, clierr.Code(err)
}

func TestEveryVerbIsRegistered(t *testing.T) {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	for _, verb := range []string{"up", "down", "status", "logs", "gpus", "doctor", "render", "build", "data", "lab", "verify", "version", "worker", "images", "credentials", "backup", "restore"} {
		cmd, _, err := root.Find([]string{verb})
		require.NoError(t, err, verb)
		assert.Equal(t, verb, cmd.Name())
	}
}
