package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesWithModeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	require.NoError(t, Write(p, []byte("new"), 0o600))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temp file left behind")
}

func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "creds")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = WriteNew(p, []byte{byte('a' + i)}, 0o600)
		}(i)
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			assert.True(t, errors.Is(err, fs.ErrExist), "%v", err)
		}
	}
	assert.Equal(t, 1, won, "exactly one writer creates the file")
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1)
}

func TestCreateAbortKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "archive.tar")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	f, err := Create(p, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("half")
	require.NoError(t, err)
	f.Abort()
	b, _ := os.ReadFile(p)
	assert.Equal(t, "old", string(b))
	require.NoError(t, Copy(p, strings.NewReader("whole"), 0o644))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "whole", string(b))
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1)
	assert.Error(t, f.Commit(), "a File commits once")
}

func TestWriteIntoMissingDirNamesThePath(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "no", "such", "f"), nil, 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("no", "such", "f"))
}
