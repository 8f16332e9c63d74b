package lifecycle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/state"
)

// keptFiles are a lab's files as they were before a re-up rewrote them: a
// re-up refused before it touches a container (a busy port, an image it
// cannot get) puts them back, so compose.yaml, the generated files and
// state.json keep describing the lab that runs.
type keptFiles struct {
	dir   state.Dir
	files map[string]*keptFile // by name in dir
}

type keptFile struct {
	data []byte
	mode fs.FileMode
}

// keepFiles reads what rendering p and saving its state will rewrite in
// dir; nil when dir holds no lab yet (a first up has nothing to keep).
func keepFiles(dir state.Dir, p plan.Plan) (*keptFiles, error) {
	if _, err := os.Lstat(dir.File(state.StateFile)); err != nil {
		return nil, nil // no lab recorded: nothing to keep
	}
	generated, err := render.GeneratedFiles(p)
	if err != nil {
		return nil, err
	}
	k := &keptFiles{dir: dir, files: map[string]*keptFile{}}
	names := []string{compose.ComposeFile, state.StateFile}
	for n := range generated {
		names = append(names, n)
	}
	for _, n := range names {
		path := dir.File(n)
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			k.files[n] = nil
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("keep %s: %w", path, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("keep %s: %w", path, err)
		}
		k.files[n] = &keptFile{data: b, mode: st.Mode().Perm()}
	}
	return k, nil
}

// restore writes the kept files back and removes the ones that were not
// there.
func (k *keptFiles) restore() error {
	var errs []error
	for n, f := range k.files {
		path := k.dir.File(n)
		if f == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if err := atomicfile.Write(path, f.data, f.mode); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("put the state dir's files back as they were: %w", err)
	}
	return nil
}
