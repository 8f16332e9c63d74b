// Package workspace is what students get in Jupyter and what `mltrain lab`
// submits as the job's working_dir: train.py (one script whose flags replace
// the course's git branches) and the modules beside it that it and Ray's
// workers import, runtime.json, requirements.txt and a README.
package workspace

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/mltrain/mltrain/internal/atomicfile"
)

//go:embed train.py lab_events.py food11_model.py ray_modes.py runtime.json requirements.txt README.md
var files embed.FS

// Names lists the workspace's files.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// File returns one embedded file.
func File(name string) ([]byte, error) { return files.ReadFile(name) }

// Ensure writes the workspace into dir, creating dir if needed. Files that
// exist already are left alone: they may hold a student's edits. It returns
// the files it wrote.
func Ensure(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace %s: %w", dir, err)
	}
	var written []string
	for _, name := range Names() {
		dst := filepath.Join(dir, name)
		b, err := files.ReadFile(name)
		if err != nil {
			return written, err
		}
		// Only where no file is: one that exists may hold a student's
		// edits. Written whole or not at all, so an interrupted run never
		// leaves half a file that the next run would keep.
		err = atomicfile.WriteNew(dst, b, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("workspace file: %w", err)
		}
		written = append(written, name)
	}
	return written, nil
}
