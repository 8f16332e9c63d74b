// Package state is where the lab is written and read back: the state
// directory (~/.mltrain/<project>), state.json (the plan of the lab up or
// join brought up), credentials.json, the exercise records, and the clients
// of a running lab built from them.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/service"
)

// StateDir is a lab's state directory (~/.mltrain/<project> by default): the
// one owner of the files mltrain keeps per lab. Secrets live here, so the
// directory is 0700 and the files that hold secrets 0600.
type Dir string

// Files in the state dir.
const (
	CredentialsFile = "credentials.json" // the lab's secrets (0600)
	StateFile       = "state.json"       // the lab's plan, recorded by up and join (0600)
	RecordsDir      = "exercises"        // one JSON record per exercise run
	ReportsDir      = "reports"          // the last reports of commands that judge the lab
	// VerifyReportFile is the last 'mltrain verify' report, as its --json
	// prints it (0600): a backup carries it.
	VerifyReportFile = ReportsDir + "/verify.json"
)

// DefaultStateDir is ~/.mltrain/<project>, overridden by $MLTRAIN_STATE_DIR.
func DefaultDir(project string) Dir {
	if project == "" {
		project = service.DefaultProject
	}
	if d := os.Getenv("MLTRAIN_STATE_DIR"); d != "" {
		return Dir(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return Dir(filepath.Join(".mltrain", project))
	}
	return Dir(filepath.Join(home, ".mltrain", project))
}

// Path is the directory itself.
func (d Dir) Path() string { return string(d) }

// File is the path of name inside the state dir.
func (d Dir) File(name string) string { return filepath.Join(string(d), name) }

// RecordFile is where exercise name's last record is kept, relative to the
// state dir.
func RecordFile(name string) string { return filepath.Join(RecordsDir, name+".json") }

// Ensure creates the directory (0700) if needed and proves it is writable:
// only the commands that write the lab (up, render) call it, so a read-only
// state dir still serves status, logs and verify.
func (d Dir) Ensure() error {
	dir := string(d)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s cannot be created: %w", dir, err), unwritableHint(dir, err))
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s is not writable: %w", dir, err), unwritableHint(dir, err))
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s: %w", dir, err), unwritableHint(dir, err))
	}
	return nil
}

// unwritableHint says how to get a writable state dir: no chown makes a
// read-only filesystem writable, so there the way is another directory.
func unwritableHint(dir string, err error) string {
	if errors.Is(err, syscall.EROFS) {
		return fmt.Sprintf("%s is on a read-only filesystem: copy its files to a writable directory (credentials.json holds the lab's secrets) and use that with --state-dir DIR; status, logs and verify still read it where it is", dir)
	}
	return fmt.Sprintf("make %s writable ('sudo chown -R $USER %s') or choose another with --state-dir DIR", dir, dir)
}

// WriteJSON stores v as indented JSON at rel (atomically, mode 0600),
// creating rel's directory (0700) when needed.
func (d Dir) WriteJSON(rel string, v any) error {
	path := filepath.Join(string(d), rel)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return clierr.WithHint(fmt.Errorf("writing %s: %w", path, err), "check that the state dir is writable, or use --state-dir DIR")
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return clierr.WithHint(err, "check that the state dir is writable, or use --state-dir DIR")
	}
	return nil
}

// ReadJSON decodes the JSON file at rel into v; a missing file is an error
// wrapping fs.ErrNotExist, for the caller to explain.
func (d Dir) ReadJSON(rel string, v any) error {
	path := filepath.Join(string(d), rel)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return nil
}

// isMissing reports a file that does not exist.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// JoinFile keeps, on a second host, the bundle it joined with (0600: it
// holds the lab's Ray token and MinIO user): status, down and a re-join
// read it there.
const JoinFile = "join.json"
