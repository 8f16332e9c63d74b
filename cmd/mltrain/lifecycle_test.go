package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
)

// rootNoEngine is the CLI with an engine that must not be reached: these
// inputs are refused before anything touches Docker.
func rootNoEngine(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut)
	a.connect = func(context.Context) (docker.Engine, error) {
		t.Errorf("%v reached the engine", args)
		return nil, errors.New("unreachable")
	}
	root := a.root()
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return errOut.String(), err
}

func TestDownVolumesAsksFirst(t *testing.T) {
	stderr, err := rootNoEngine(t, "n\n", "down", "--volumes")
	require.Error(t, err)
	assert.Contains(t, stderr, "including every MinIO checkpoint? [y/N]")
	assert.Contains(t, err.Error(), "not confirmed: nothing removed")
	assert.Contains(t, clierr.Hint(err), "mltrain down --volumes --yes")
}

func TestWorkerRefusesBadInput(t *testing.T) {
	_, err := rootNoEngine(t, "", "worker", "restart", "1")
	require.Error(t, err)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
	assert.Contains(t, err.Error(), `unknown worker action "restart"`)
	assert.Contains(t, clierr.Hint(err), "mltrain worker stop N")

	_, err = rootNoEngine(t, "", "worker", "stop", "one")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `worker index "one" is not a number`)
}
