package plan

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bundle is found in what a user pastes or saves: the bundle alone, or
// the whole line join-token printed.
func TestJoinBundleFromTextTakesTheBundleWord(t *testing.T) {
	b := sampleBundle()
	for _, text := range []string{b.Encode(), "  " + b.Encode() + "\n", "echo '" + b.Encode() + "' | mltrain join -", "mltrain join " + b.Encode()} {
		got, err := JoinBundleFromText(text)
		require.NoError(t, err, text)
		assert.Equal(t, b, got)
	}
	_, err := JoinBundleFromText("hello")
	assert.ErrorContains(t, err, "not a join bundle")
}

// Stdin is read up to its first non-blank line, so a pipe left open after
// the bundle does not hold join up.
func TestReadJoinBundleTextStopsAtTheFirstLine(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	_, err = w.WriteString("\n  \n" + sampleBundle().Encode() + "\n")
	require.NoError(t, err)
	text, err := ReadJoinBundleText(r) // w stays open: no EOF
	require.NoError(t, err)
	assert.Equal(t, sampleBundle().Encode(), text)
	text, err = ReadJoinBundleText(strings.NewReader(""))
	require.NoError(t, err)
	assert.Empty(t, text)
}

// A bundle file is read only when it is a regular file only its owner may
// read, reached without a symbolic link.
func TestReadJoinBundleFileRefusesWhatOthersCouldReadOrSwap(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(sampleBundle().Encode()+"\n"), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	for _, perm := range []os.FileMode{0o600, 0o400} {
		b, err := ReadJoinBundleFile(write("ok"+perm.String(), perm))
		require.NoError(t, err, perm)
		assert.Equal(t, sampleBundle(), b)
	}
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		_, err := ReadJoinBundleFile(write("open"+perm.String(), perm))
		assert.ErrorIs(t, err, ErrBundleFileExposed, perm)
	}
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(write("target", 0o600), link))
	_, err := ReadJoinBundleFile(link)
	assert.ErrorIs(t, err, ErrBundleFileLink)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err = ReadJoinBundleFile(fifo) // refused at once, not blocked on a writer
	assert.ErrorContains(t, err, "is not a regular file")
	_, err = ReadJoinBundleFile(dir)
	assert.ErrorContains(t, err, "is not a regular file")
	_, err = ReadJoinBundleFile(filepath.Join(dir, "none"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
