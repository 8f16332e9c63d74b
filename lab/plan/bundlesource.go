package plan

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// How a join bundle reaches `mltrain join` off the command line, where
// every user of the host could read it (ps, /proc/PID/cmdline).
const (
	// JoinBundleEnv names the environment variable join reads it from.
	JoinBundleEnv = "MLTRAIN_JOIN_BUNDLE"
	// maxBundleText bounds what is read: a bundle is well under 2 KiB.
	maxBundleText = 64 << 10
)

// What is wrong with a bundle file, for the command layer to say what to
// do about it (errors.Is).
var (
	// ErrBundleFileExposed: group or others may read the file.
	ErrBundleFileExposed = errors.New("the join bundle file is readable by others")
	// ErrBundleFileLink: the path is a symbolic link, which is not followed.
	ErrBundleFileLink = errors.New("the join bundle file is a symbolic link")
)

// IsJoinBundle says whether word looks like a join bundle (of any version),
// so a command line can be written again without it.
func IsJoinBundle(word string) bool { return strings.HasPrefix(word, "mltrain-join-") }

// JoinBundleFromText decodes the bundle in text: the bundle itself, or a
// whole line join-token printed (the word that is a bundle is taken).
func JoinBundleFromText(text string) (JoinBundle, error) {
	for _, w := range strings.Fields(text) {
		if IsJoinBundle(strings.Trim(w, `'"`)) {
			return DecodeJoinBundle(strings.Trim(w, `'"`))
		}
	}
	return DecodeJoinBundle(text)
}

// ReadJoinBundleText reads the first non-blank line of r (stdin): it stops
// there, so a pipe kept open after the bundle does not hold join up.
func ReadJoinBundleText(r io.Reader) (string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxBundleText))
	sc.Buffer(make([]byte, 0, 4096), maxBundleText)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read the join bundle from stdin: %w", err)
	}
	return "", nil
}

// ReadJoinBundleFile reads the bundle in path, a regular file only its
// owner may read: a symbolic link is refused, never followed (someone else
// could point it elsewhere), and so is a file group or others may read (it
// holds the lab's Ray token and MinIO keys).
func ReadJoinBundleFile(path string) (JoinBundle, error) {
	// O_NONBLOCK: a FIFO at path fails the regular-file check rather than
	// blocking the open.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return JoinBundle{}, fmt.Errorf("join bundle file %s: %w (it is not followed)", path, ErrBundleFileLink)
	case err != nil:
		return JoinBundle{}, fmt.Errorf("open join bundle file %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return JoinBundle{}, fmt.Errorf("join bundle file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return JoinBundle{}, fmt.Errorf("join bundle file %s is not a regular file (%s)", path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return JoinBundle{}, fmt.Errorf("join bundle file %s has mode %04o: %w, and it holds the lab's Ray token and MinIO keys", path, perm, ErrBundleFileExposed)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBundleText))
	if err != nil {
		return JoinBundle{}, fmt.Errorf("read join bundle file %s: %w", path, err)
	}
	return JoinBundleFromText(string(b))
}
