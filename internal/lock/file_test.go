package lock

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobody stands in for another local user.
const nobody = 65534

// sharedTemp points DefaultDir into a fresh temp dir for the test.
func sharedTemp(t *testing.T) string {
	t.Setenv("TMPDIR", t.TempDir())
	return DefaultDir()
}

func acquire(path string) (*Lock, error) {
	return Acquire(context.Background(), path, "lab x", Holder{Command: "mltrain up"}, true, nil)
}

func mustRelease(t *testing.T, l *Lock) {
	t.Helper()
	require.NoError(t, l.Release())
}

func asRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user (uid 65534)")
	}
}

func requireUnsafe(t *testing.T, err error, names string) {
	t.Helper()
	require.ErrorIs(t, err, ErrUnsafe)
	require.Contains(t, err.Error(), names)
}

func TestTheSharedDirIsMadeSticky(t *testing.T) {
	old := syscall.Umask(0o022) // as most users have it: Mkdir alone gives 0755
	defer syscall.Umask(old)
	dir := sharedTemp(t)
	l, err := acquire(File("", "lab", "unix:///run/docker.sock", "p"))
	require.NoError(t, err)
	defer mustRelease(t, l)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir|os.ModeSticky|0o777, fi.Mode(), "drwxrwxrwt like /tmp")
}

func TestASharedDirWithoutTheStickyBitIsRepaired(t *testing.T) {
	dir := sharedTemp(t)
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777)) // as the old os.Chmod(dir, 0o1777) left it
	fi, _ := os.Stat(dir)
	require.Zero(t, fi.Mode()&os.ModeSticky)
	l, err := acquire(File("", "lab", "e", "p"))
	require.NoError(t, err)
	defer mustRelease(t, l)
	fi, err = os.Stat(dir)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSticky, "repaired: %s", fi.Mode())
	assert.Equal(t, os.ModeDir|os.ModeSticky|0o777, fi.Mode())
}

func TestAnotherUsersSharedDirWithoutTheStickyBitIsRefused(t *testing.T) {
	asRoot(t)
	dir := sharedTemp(t)
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.Chown(dir, nobody, nobody))
	_, err := acquire(File("", "lab", "e", "p"))
	requireUnsafe(t, err, dir)
	assert.Contains(t, err.Error(), "chmod 1777 "+dir, "says what to do")
	fi, _ := os.Stat(dir)
	assert.Zero(t, fi.Mode()&os.ModeSticky, "not repaired behind its owner's back")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "no lock was taken in it")

	// Sticky and open to all, as another user's mltrain makes it: shared.
	require.NoError(t, os.Chmod(dir, os.ModeSticky|0o777))
	l, err := acquire(File("", "lab", "e", "p"))
	require.NoError(t, err)
	mustRelease(t, l)
}

func TestASymlinkedSharedDirIsRefused(t *testing.T) {
	dir := sharedTemp(t)
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(elsewhere, dir))
	_, err := acquire(File("", "lab", "e", "p"))
	requireUnsafe(t, err, dir)
	entries, _ := os.ReadDir(elsewhere)
	assert.Empty(t, entries, "nothing made where the link points")
}
