// Package atomicfile writes files so that a reader (a container mounting
// them, a concurrent mltrain) sees the old content or the new, never half of
// it: write a temp file in the same directory, sync, then rename or link.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, with mode perm whatever the umask.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteNew stores data at path only if path does not exist yet (a hard link
// of a complete temp file), so concurrent first writers agree on one
// content. An existing path is reported as an error wrapping fs.ErrExist.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("writing %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// File is a file being written in place of another: Commit renames it over
// the target, Abort (safe after Commit) removes what was written.
type File struct {
	*os.File
	target string
	done   bool
}

// Create starts writing a file that will replace path on Commit.
func Create(path string, perm os.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return &File{File: f, target: path}, nil
}

// Commit syncs and closes the file, then renames it over the target.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("writing %s: already committed or aborted", f.target)
	}
	f.done = true
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(serr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", f.target, err)
	}
	if err := os.Rename(f.Name(), f.target); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", f.target, err)
	}
	return nil
}

// Abort drops the partial file; the target is left as it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// Copy writes r's content to path atomically.
func Copy(path string, r io.Reader, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(f.Name(), perm)); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Name(), nil
}
