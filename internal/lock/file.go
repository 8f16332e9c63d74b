package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultDir is one folder for every user of this host's engines: two
// writers of one lab or one volume must see each other whatever their
// state dirs.
func DefaultDir() string { return filepath.Join(os.TempDir(), "mltrain-locks") }

// File is the lock file of the object name of a kind ("lab", "volume") on
// the engine at address, in dir (DefaultDir when empty). An object's
// identity is its name on its engine: the engine's address is hashed into
// the file's name. Acquire makes the directory, the default one shared
// like /tmp.
func File(dir, kind, engine, name string) string {
	if dir == "" {
		dir = DefaultDir()
	}
	h := sha256.Sum256([]byte(engine))
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.lock", kind, hex.EncodeToString(h[:4]), name))
}

// ErrUnsafe is wrapped by the errors for a lock directory or file that
// another local user could have planted or could tamper with: mltrain
// refuses it rather than lock through it.
var ErrUnsafe = errors.New("not safe to lock through")

// sharedMode is the shared directory's mode, /tmp's: anyone may add a lock,
// only a file's owner may remove or replace it. Go sets the sticky bit only
// through os.ModeSticky (os.Chmod(dir, 0o1777) drops it).
const sharedMode = os.ModeSticky | 0o777

// prepareDir makes the directory of the lock file at path: the shared
// default one sticky and writable by all, any other as the user's own.
func prepareDir(path string) error {
	dir := filepath.Dir(path)
	if dir != filepath.Clean(DefaultDir()) {
		return os.MkdirAll(dir, 0o777)
	}
	return sharedDir(dir)
}

// sharedDir makes dir the shared lock directory, or checks and repairs the
// one there. Another user's directory is used only when it is sticky and
// writable by all: its owner could still remove locks, but no one else; a
// symbolic link could send the locks anywhere and is refused.
func sharedDir(dir string) error {
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make lock directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("lock directory %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return fmt.Errorf("lock directory %s is a symbolic link (to %s), which mltrain never makes: another user could redirect the locks; remove it (as its owner or root) and mltrain makes a directory there: %w",
			dir, target, ErrUnsafe)
	}
	if !fi.IsDir() {
		return fmt.Errorf("lock directory %s is not a directory (%s); remove it and mltrain makes one there: %w", dir, fi.Mode().Type(), ErrUnsafe)
	}
	if fi.Mode()&(os.ModeSticky|os.ModePerm) == sharedMode {
		return nil
	}
	if owner := ownerOf(fi); owner != os.Geteuid() {
		return fmt.Errorf("lock directory %s belongs to uid %d and has mode %s, not %s: other users could remove or replace the locks in it; ask its owner (or root) to run `chmod 1777 %s`, or remove it so mltrain makes it again: %w",
			dir, owner, fi.Mode(), os.ModeDir|sharedMode, dir, ErrUnsafe)
	}
	// Ours with the wrong mode, as made by umask or by an mltrain that
	// lost the sticky bit: repair it.
	if err := os.Chmod(dir, sharedMode); err != nil {
		return fmt.Errorf("make lock directory %s sticky and shared (chmod 1777): %w", dir, err)
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// openFlags never follow a symbolic link at the lock's path (a planted one
// would make this user create or lock any file it points to) and never
// block opening a FIFO planted there.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// openLockFile opens the lock file at path, creating it if absent. An
// existing file is opened without O_CREAT: Linux's protected_regular
// refuses O_CREAT on another user's file in a sticky directory, and
// another mltrain user's lock file is what a shared lock looks like.
func openLockFile(path string) (*os.File, error) {
	for range 3 {
		f, err := os.OpenFile(path, os.O_RDWR|openFlags, 0)
		if errors.Is(err, fs.ErrPermission) { // another user's lock, 0644: flock needs no write access
			f, err = os.OpenFile(path, os.O_RDONLY|openFlags, 0)
		}
		if errors.Is(err, fs.ErrNotExist) {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|openFlags, 0o644)
			if errors.Is(err, fs.ErrExist) {
				continue // made meanwhile: open that one
			}
			if err == nil {
				// Readable by all, whatever the umask, so that other users
				// can lock it too; writable by no one else.
				err = f.Chmod(0o644)
			}
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lock file %s is a symbolic link, which mltrain never makes: another user could redirect the lock to any file; remove it (as its owner or root): %w",
				path, ErrUnsafe)
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			return nil, fmt.Errorf("open lock file %s: %w", path, err)
		}
		if err := checkLockFile(f, path); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("open lock file %s: it keeps appearing and vanishing: %w", path, ErrUnsafe)
}

// checkLockFile accepts a regular file that is this user's or looks like
// another mltrain user's lock (empty, one link); anything else at a lock's
// path was put there by someone else. It checks the open file, not the
// path, so nothing can be swapped in between.
func checkLockFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("lock file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("lock file %s is not a regular file (%s), which mltrain never makes; remove it (as its owner or root): %w", path, fi.Mode().Type(), ErrUnsafe)
	}
	owner := ownerOf(fi)
	if owner == os.Geteuid() {
		return nil
	}
	links := uint64(1)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		links = uint64(st.Nlink)
	}
	if fi.Size() != 0 || links != 1 {
		return fmt.Errorf("lock file %s belongs to uid %d and is not an mltrain lock (%d bytes, %d links; a lock is empty with one): remove it (as its owner or root): %w",
			path, owner, fi.Size(), links, ErrUnsafe)
	}
	return nil
}
