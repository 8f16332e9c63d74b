package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDir is one folder for every user of this host's engines: two
// writers of one lab or one volume must see each other whatever their
// state dirs.
func DefaultDir() string { return filepath.Join(os.TempDir(), "mltrain-locks") }

// File is the lock file of the object name of a kind ("lab", "volume") on
// the engine at address, in dir (DefaultDir when empty). An object's
// identity is its name on its engine: the engine's address is hashed into
// the file's name. The default dir is made shared like /tmp, so any user's
// command may take a lock there.
func File(dir, kind, engine, name string) string {
	if dir == "" {
		dir = DefaultDir()
		_ = os.MkdirAll(dir, 0o777)
		_ = os.Chmod(dir, 0o1777)
	}
	h := sha256.Sum256([]byte(engine))
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.lock", kind, hex.EncodeToString(h[:4]), name))
}
