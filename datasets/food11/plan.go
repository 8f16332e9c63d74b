package food11

import (
	"archive/zip"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrTraversal marks a zip entry that would escape the dataset directory.
var ErrTraversal = errors.New("path traversal")

// BadZipError lists the entries of a zip that do not fit Food-11. Nothing is
// written to the volume when the zip has any.
type BadZipError struct {
	Zip      string
	Problems []string // the first few, one per entry
	Count    int      // how many entries are bad

	traversal bool
}

func (e *BadZipError) Error() string {
	msg := fmt.Sprintf("%s is not a Food-11 zip: %d bad entr%s: %s", e.Zip, e.Count, plural(e.Count, "y", "ies"), strings.Join(e.Problems, "; "))
	if e.Count > len(e.Problems) {
		msg += fmt.Sprintf("; and %d more", e.Count-len(e.Problems))
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrTraversal) find a traversal among the problems.
func (e *BadZipError) Unwrap() error {
	if e.traversal {
		return ErrTraversal
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// entry is one image of the plan: a zip file and where it goes.
type entry struct {
	f     *zip.File
	split string
	class int
	name  string // <c>_<n>.jpg
}

func (e entry) target() string {
	return fmt.Sprintf("%s/%s/class_%02d/%s", Root, e.split, e.class, e.name)
}

// plan is a checked zip: every image's place, the counts, the bytes. It is
// made from the central directory alone, before anything reaches the volume.
type plan struct {
	entries []entry
	counts  Counts
	bytes   int64
	prefix  string // the single top-level folder stripped, "" if none
	skipped int    // macOS metadata entries ignored
}

var imageName = regexp.MustCompile(`^(0|[1-9][0-9]*)_([0-9]+)\.jpg$`)

const maxProblems = 5

// makePlan checks every entry of zr (named what in messages) and maps it to
// its place in the course's layout.
func makePlan(zr *zip.Reader, what string) (*plan, error) {
	bad := &BadZipError{Zip: what}
	problem := func(name, msg string, traversal bool) {
		bad.Count++
		bad.traversal = bad.traversal || traversal
		if len(bad.Problems) < maxProblems {
			bad.Problems = append(bad.Problems, fmt.Sprintf("%q: %s", name, msg))
		}
	}
	type file struct {
		f     *zip.File
		parts []string
	}
	var files []file
	for _, f := range zr.File {
		parts, err := cleanParts(f.Name)
		if err != nil {
			problem(f.Name, err.Error(), errors.Is(err, ErrTraversal))
			continue
		}
		if len(parts) == 0 || strings.HasSuffix(f.Name, "/") || f.Mode().IsDir() {
			continue
		}
		if isJunk(parts) {
			continue
		}
		if !f.Mode().IsRegular() {
			problem(f.Name, "not a regular file (symlink or device)", false)
			continue
		}
		files = append(files, file{f, parts})
	}
	p := &plan{counts: Counts{}}
	for _, f := range zr.File {
		if parts, err := cleanParts(f.Name); err == nil && isJunk(parts) {
			p.skipped++
		}
	}
	// Tolerate one wrapper folder (PyImageSearch's copy has Food-11/ on top):
	// strip it when every file sits under the same non-split folder.
	if len(files) > 0 {
		top := files[0].parts[0]
		same := !isSplit(top)
		for _, f := range files {
			if len(f.parts) < 3 || f.parts[0] != top {
				same = false
				break
			}
		}
		if same {
			p.prefix = top
			for i := range files {
				files[i].parts = files[i].parts[1:]
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		if len(f.parts) != 2 {
			problem(f.f.Name, "want <split>/<class>_<n>.jpg with split training, validation or evaluation", false)
			continue
		}
		split, name := f.parts[0], f.parts[1]
		if !isSplit(split) {
			problem(f.f.Name, fmt.Sprintf("unknown split folder %q (want training, validation or evaluation)", split), false)
			continue
		}
		m := imageName.FindStringSubmatch(name)
		if m == nil {
			problem(f.f.Name, "file name is not <class>_<n>.jpg", false)
			continue
		}
		class, err := strconv.Atoi(m[1])
		if err != nil || class < 0 || class >= NumClasses {
			problem(f.f.Name, fmt.Sprintf("class %s is outside 0-%d", m[1], NumClasses-1), false)
			continue
		}
		if seen[split+"/"+name] {
			problem(f.f.Name, "appears twice", false)
			continue
		}
		seen[split+"/"+name] = true
		p.entries = append(p.entries, entry{f: f.f, split: split, class: class, name: name})
		p.counts.Add(split, class)
		p.bytes += int64(f.f.UncompressedSize64)
	}
	for _, s := range Splits {
		if p.counts.Split(s) == 0 && bad.Count == 0 {
			bad.Count++
			bad.Problems = append(bad.Problems, fmt.Sprintf("split %s is missing (no %s/<class>_<n>.jpg entries)", s, s))
		}
	}
	if bad.Count > 0 {
		return nil, bad
	}
	return p, nil
}

// cleanParts splits a zip entry name into path components, rejecting names
// that could land outside the dataset directory.
func cleanParts(name string) ([]string, error) {
	if strings.ContainsRune(name, '\\') {
		return nil, fmt.Errorf("%w: backslash in name", ErrTraversal)
	}
	if strings.HasPrefix(name, "/") || (len(name) >= 2 && name[1] == ':') {
		return nil, fmt.Errorf("%w: absolute path", ErrTraversal)
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%w: '..' in path", ErrTraversal)
		}
		if strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("NUL byte in name")
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// isJunk is macOS archive metadata (__MACOSX/, ._*, .DS_Store): not data.
func isJunk(parts []string) bool {
	base := parts[len(parts)-1]
	return parts[0] == "__MACOSX" || strings.HasPrefix(base, "._") || base == ".DS_Store"
}

func isSplit(s string) bool {
	for _, x := range Splits {
		if s == x {
			return true
		}
	}
	return false
}
