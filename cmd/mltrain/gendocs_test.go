package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gen-docs writes one man page per visible command (none for hidden ones),
// named as man looks them up, and completion scripts identical to what
// `mltrain completion <shell>` prints.
func TestGenDocsWritesManPagesAndCompletions(t *testing.T) {
	stamp(t, "0.3.0", "0123abc", "2026-11-23T20:00:00Z")
	t.Setenv("SOURCE_DATE_EPOCH", "1795000000")
	dir := t.TempDir()
	_, _, code := run(t, "gen-docs", dir)
	require.Equal(t, 0, code)

	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1.gz")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	sort.Strings(want)
	entries, err := os.ReadDir(filepath.Join(dir, "man"))
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.Equal(t, want, got)
	assert.Contains(t, got, "mltrain-fleet-verify.1.gz")
	assert.NotContains(t, got, "mltrain-gen-docs.1.gz")

	b, err := os.ReadFile(filepath.Join(dir, "man", "mltrain-up.1.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	page, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Contains(t, string(page), `.TH "MLTRAIN" "1" "Nov 2026" "mltrain 0.3.0" "mltrain manual"`)
	assert.Contains(t, string(page), "\nmltrain-up - Bring the whole lab up")
	assert.Contains(t, string(page), "--data", "its flags")

	for file, shell := range map[string]string{"mltrain.bash": "bash", "_mltrain": "zsh", "mltrain.fish": "fish"} {
		script, err := os.ReadFile(filepath.Join(dir, "completions", file))
		require.NoError(t, err)
		out, _, code := run(t, "completion", shell)
		require.Equal(t, 0, code)
		assert.Equal(t, out, string(script), file)
	}
}

func TestGenDocsNeedsADirectory(t *testing.T) {
	_, errOut, code := run(t, "gen-docs")
	assert.Equal(t, 2, code, errOut)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, _, code = run(t, "gen-docs", file)
	assert.Equal(t, 1, code, "a file where the directory goes")
}
