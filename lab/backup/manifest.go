// Package backup is 'mltrain backup' and 'mltrain restore': the lab's
// bucket, its workspace, its exercise records and its plan, written to a
// .tar.gz or an S3 prefix with a manifest.json of every file's sha256, and
// read back into a running lab only once every sha256 is proven.
package backup

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// ManifestName is the manifest's name: the last entry of an archive, the
// last object written under an S3 prefix (so a backup cut short never has
// one that lists it).
const ManifestName = "manifest.json"

// Where each kind of file lives inside a backup.
const (
	BucketDir    = "bucket"    // bucket/<bucket>/<key>: the lab's MinIO objects
	WorkspaceDir = "workspace" // workspace/<path>: the Jupyter workspace
	RecordsDir   = "records"   // records/<exercise>.json: the exercise records
	ReportsDir   = "reports"   // reports/verify.json: the lab's last verify report
	PlanDir      = "plan"      // plan/state.json: the lab's plan, for reference (never restored)
)

// Manifest lists every file of a backup.
type Manifest struct {
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	Project string    `json:"project"`
	Bucket  string    `json:"bucket"`
	Entries []Entry   `json:"entries"`
}

// Entry is one file: its path in the backup, its size and sha256 (hex, as
// sha256sum prints it), and where it came from.
type Entry struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	From    string    `json:"from"`
	ModTime time.Time `json:"mtime"`
	Mode    uint32    `json:"mode,omitempty"`
}

// checkPath refuses an entry path that could leave the directory it is
// restored into (an archive is input, not trusted).
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("path %q in the backup is not a plain relative path", p)
	}
	return nil
}

// decodeManifest reads and checks a manifest.
func decodeManifest(b []byte, where string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: manifest.json is not valid JSON: %w", where, err)
	}
	if m.Version != 1 {
		return Manifest{}, fmt.Errorf("%s: manifest.json has version %d, this mltrain reads version 1", where, m.Version)
	}
	seen := map[string]bool{}
	for _, e := range m.Entries {
		if err := checkPath(e.Path); err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", where, err)
		}
		if seen[e.Path] {
			return Manifest{}, fmt.Errorf("%s: manifest.json lists %s twice", where, e.Path)
		}
		seen[e.Path] = true
		if len(e.SHA256) != 64 || e.Size < 0 {
			return Manifest{}, fmt.Errorf("%s: manifest.json's entry %s has no valid sha256 or size", where, e.Path)
		}
	}
	return m, nil
}

// byPath indexes entries by path.
func (m Manifest) byPath() map[string]Entry {
	out := make(map[string]Entry, len(m.Entries))
	for _, e := range m.Entries {
		out[e.Path] = e
	}
	return out
}

// Bytes is the total size of the entries.
func (m Manifest) Bytes() int64 {
	var n int64
	for _, e := range m.Entries {
		n += e.Size
	}
	return n
}
