package lock

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

func TestAPlantedSymlinkAtTheLockPathIsRefused(t *testing.T) {
	sharedTemp(t)
	victims := t.TempDir()
	absent := filepath.Join(victims, "nologin")
	precious := filepath.Join(victims, "precious")
	require.NoError(t, os.WriteFile(precious, []byte("keep"), 0o600))
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(precious, past, past))

	for _, target := range []string{absent, precious} {
		path := File("", "lab", "e", filepath.Base(target))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o777))
		require.NoError(t, os.Symlink(target, path))
		_, err := acquire(path)
		requireUnsafe(t, err, path)
		assert.Contains(t, err.Error(), "symbolic link")
	}
	_, err := os.Lstat(absent)
	assert.ErrorIs(t, err, os.ErrNotExist, "the link's target was not created")
	b, err := os.ReadFile(precious)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
	fi, err := os.Stat(precious)
	require.NoError(t, err)
	assert.True(t, past.Equal(fi.ModTime()), "the link's target was not touched: %s", fi.ModTime())
	assert.Equal(t, os.FileMode(0o600), fi.Mode())
}

func TestAnotherUsersFileThatIsNoLockIsRefused(t *testing.T) {
	asRoot(t)
	sharedTemp(t)
	path := File("", "lab", "e", "p")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o777))
	require.NoError(t, os.WriteFile(path, []byte("not a lock"), 0o644))
	require.NoError(t, os.Chown(path, nobody, nobody))
	_, err := acquire(path)
	requireUnsafe(t, err, path)
	assert.Contains(t, err.Error(), "uid 65534")
	b, _ := os.ReadFile(path)
	assert.Equal(t, "not a lock", string(b), "left as it was")

	// A hard link to another file is no lock either, empty or not.
	linked := File("", "lab", "e", "linked")
	require.NoError(t, os.WriteFile(linked+".orig", nil, 0o644))
	require.NoError(t, os.Link(linked+".orig", linked))
	require.NoError(t, os.Chown(linked, nobody, nobody))
	_, err = acquire(linked)
	requireUnsafe(t, err, linked)
}

// Another user's lock (empty, made by their mltrain) is the shared lock:
// this user takes it, and a second writer here is refused by it.
func TestAnotherUsersLockFileIsShared(t *testing.T) {
	asRoot(t)
	sharedTemp(t)
	path := File("", "lab", "e", "p")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o777))
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Chown(path, nobody, nobody))
	l, err := acquire(path)
	require.NoError(t, err)
	defer mustRelease(t, l)
	_, err = acquire(path)
	var held *HeldError
	require.ErrorAs(t, err, &held)
}

func TestAFIFOAtTheLockPathIsRefusedWithoutHanging(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.lock")
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	done := make(chan error, 1)
	go func() { _, err := acquire(path); done <- err }()
	select {
	case err := <-done:
		requireUnsafe(t, err, path)
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire hung opening a FIFO")
	}
}

func TestANewLockFileIsReadableByAllWritableByItsOwner(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "lab.lock")
	l, err := acquire(path)
	require.NoError(t, err)
	defer mustRelease(t, l)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode(), "others can open it to lock; none can write it")
}

// A holder note planted as a symbolic link is not read through.
func TestAPlantedHolderNoteLinkIsNotFollowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.lock")
	first, err := acquire(path)
	require.NoError(t, err)
	defer mustRelease(t, first)
	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"pid":4242,"command":"secret"}`), 0o600))
	require.NoError(t, os.Remove(holderPath(path)))
	require.NoError(t, os.Symlink(secret, holderPath(path)))
	_, err = acquire(path)
	var held *HeldError
	require.ErrorAs(t, err, &held)
	assert.Zero(t, held.Holder, "named as another mltrain command, not from the linked file")
}
