package ray

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/mltrain/mltrain/internal/clierr"
)

// DefaultExcludes are Ray's RAY_RUNTIME_ENV_DEFAULT_EXCLUDES.
var DefaultExcludes = []string{".git", ".venv", "venv", "__pycache__"}

// MaxPackageBytes is the dashboard's request body limit (client_max_size):
// a bigger package would fail on upload, so it is refused before.
const MaxPackageBytes = 100 << 20

// ignoreFiles are read in every directory, each applying to its subtree.
var ignoreFiles = []string{".gitignore", ".rayignore"}

// maxDepth guards against symlink loops: symlinks are followed, as Ray does.
const maxDepth = 64

// Package is a working directory packaged the way `ray job submit
// --working-dir` packages it.
type Package struct {
	URI      string // gcs://_ray_pkg_<16 hex>.zip
	Dir      string
	Zip      []byte
	Files    int   // regular files in the zip
	Bytes    int64 // their total size
	Excluded []string
}

type sizedFile struct {
	rel  string
	size int64
}

// Name is the package's file name (_ray_pkg_<hash>.zip).
func (p *Package) Name() string { return strings.TrimPrefix(p.URI, "gcs://") }

// PackageDir zips dir with Ray's default excludes, extra excludes
// (runtime_env "excludes", gitignore syntax) and every .gitignore/.rayignore
// below dir. The name is Ray's content hash: 8 bytes, XOR over every visited
// path of SHA1(relative path [+ file bytes]), starting from "00000000", so the
// same content gets the same name as the Python CLI and is uploaded once.
func PackageDir(dir string, excludes []string) (*Package, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, clierr.WithHint(fmt.Errorf("working_dir %s: %w", dir, err), "pass --workspace with an existing directory")
	}
	if !info.IsDir() {
		return nil, clierr.Hintf("pass --workspace with a directory", "working_dir %s is not a directory", dir)
	}
	w := &walker{root: dir}
	copy(w.hash[:], "00000000")
	for _, e := range append(append([]string(nil), DefaultExcludes...), excludes...) {
		w.patterns = append(w.patterns, gitignore.ParsePattern(e, nil))
	}
	w.zw = zip.NewWriter(&w.buf)
	if err := w.travel(nil, 0); err != nil {
		return nil, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, fmt.Errorf("zip working_dir %s: %w", dir, err)
	}
	p := &Package{
		URI: "gcs://_ray_pkg_" + hex.EncodeToString(w.hash[:]) + ".zip",
		Dir: dir, Zip: w.buf.Bytes(), Files: w.files, Bytes: w.bytes, Excluded: w.excluded,
	}
	if len(p.Zip) >= MaxPackageBytes {
		return nil, w.tooBig(int64(len(p.Zip)))
	}
	return p, nil
}

type walker struct {
	root     string
	patterns []gitignore.Pattern
	hash     [8]byte
	buf      bytes.Buffer
	zw       *zip.Writer
	files    int
	bytes    int64
	excluded []string
	sizes    []sizedFile
}

func (w *walker) tooBig(size int64) error {
	sort.Slice(w.sizes, func(i, j int) bool { return w.sizes[i].size > w.sizes[j].size })
	var big []string
	for i, f := range w.sizes {
		if i == 5 {
			break
		}
		big = append(big, fmt.Sprintf("%s (%.1f MiB)", f.rel, float64(f.size)/(1<<20)))
	}
	return clierr.Hintf(fmt.Sprintf("exclude big files with a .rayignore or .gitignore in %s (datasets belong in the food11 volume, not the workspace)", w.root),
		"working_dir %s is at least %.1f MiB, over the Ray dashboard's %d MiB upload limit; largest files: %s",
		w.root, float64(size)/(1<<20), MaxPackageBytes>>20, strings.Join(big, ", "))
}

func (w *walker) xor(rel string, content io.Reader) error {
	h := sha1.New()
	h.Write([]byte(rel))
	if content != nil {
		if _, err := io.Copy(h, content); err != nil {
			return err
		}
	}
	sum := h.Sum(nil)
	for i := range w.hash {
		w.hash[i] ^= sum[i]
	}
	return nil
}

// travel mirrors Ray's _dir_travel: load this directory's ignore files, skip
// the path when excluded, else hash it, zip it and descend.
func (w *walker) travel(parts []string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("working_dir %s: deeper than %d levels below %s (a symlink loop?)", w.root, maxDepth, path.Join(parts...))
	}
	rel := "."
	if len(parts) > 0 {
		rel = path.Join(parts...)
	}
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	info, err := os.Stat(abs) // follows symlinks, as Ray does
	if err != nil {
		if len(parts) == 0 {
			return fmt.Errorf("working_dir %s: %w", w.root, err)
		}
		// A dangling symlink: Ray hashes its path only and cannot zip it.
		return w.xor(rel, nil)
	}
	isDir := info.IsDir()
	n := len(w.patterns)
	defer func() { w.patterns = w.patterns[:n] }()
	if isDir {
		if err := w.loadIgnores(abs, parts); err != nil {
			return err
		}
	}
	if len(parts) > 0 && gitignore.NewMatcher(w.patterns).Match(parts, isDir) {
		w.excluded = append(w.excluded, rel)
		return nil
	}
	if !isDir {
		return w.addFile(rel, abs, info)
	}
	if err := w.xor(rel, nil); err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("working_dir %s: read %s: %w", w.root, rel, err)
	}
	if len(entries) == 0 && len(parts) > 0 {
		// Ray keeps empty directories in the zip.
		hdr := &zip.FileHeader{Name: rel + "/", Method: zip.Store, Modified: info.ModTime()}
		hdr.SetMode(info.Mode())
		if _, err := w.zw.CreateHeader(hdr); err != nil {
			return fmt.Errorf("zip %s: %w", rel, err)
		}
	}
	for _, e := range entries {
		if err := w.travel(append(append([]string(nil), parts...), e.Name()), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) addFile(rel, abs string, info fs.FileInfo) error {
	w.sizes = append(w.sizes, sizedFile{rel, info.Size()})
	// Stored, not deflated, like Ray: so the size is known before reading.
	if int64(w.buf.Len())+info.Size() >= MaxPackageBytes {
		return w.tooBig(int64(w.buf.Len()) + info.Size())
	}
	f, err := os.Open(abs)
	if err != nil {
		// Ray hashes an unreadable file's path only; it could not zip it either.
		return fmt.Errorf("working_dir %s: %w", w.root, err)
	}
	defer f.Close()
	hdr := &zip.FileHeader{Name: rel, Method: zip.Store, Modified: info.ModTime()}
	hdr.SetMode(info.Mode())
	zf, err := w.zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("zip %s: %w", rel, err)
	}
	h := sha1.New()
	h.Write([]byte(rel))
	if _, err := io.Copy(io.MultiWriter(h, zf), f); err != nil {
		return fmt.Errorf("working_dir %s: read %s: %w", w.root, rel, err)
	}
	sum := h.Sum(nil)
	for i := range w.hash {
		w.hash[i] ^= sum[i]
	}
	w.files++
	w.bytes += info.Size()
	return nil
}

func (w *walker) loadIgnores(abs string, parts []string) error {
	for _, name := range ignoreFiles {
		f, err := os.Open(filepath.Join(abs, name))
		if err != nil {
			continue // absent or unreadable: nothing to apply
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			w.patterns = append(w.patterns, gitignore.ParsePattern(line, append([]string(nil), parts...)))
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(abs, name), err)
		}
	}
	return nil
}

func packagePath(uri string) (string, error) {
	name, ok := strings.CutPrefix(uri, "gcs://")
	if !ok || !(strings.HasSuffix(name, ".zip") || strings.HasSuffix(name, ".whl")) || strings.Contains(name, "/") {
		return "", fmt.Errorf("package URI %q is not gcs://<name>.zip", uri)
	}
	return "/api/packages/gcs/" + name, nil
}

// PackageExists asks whether the cluster already holds uri (and pins it for
// a while so it survives until the job starts).
func (c *Client) PackageExists(ctx context.Context, uri string) (bool, error) {
	p, err := packagePath(uri)
	if err != nil {
		return false, err
	}
	err = c.do(ctx, http.MethodGet, p, nil, "", nil)
	switch {
	case err == nil:
		return true, nil
	case IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("check package %s: %w", uri, err)
}

// UploadPackage uploads p unless the cluster has it already (GET, then PUT
// only when missing); it reports whether bytes were sent.
func (c *Client) UploadPackage(ctx context.Context, p *Package) (bool, error) {
	if len(p.Zip) >= MaxPackageBytes {
		return false, fmt.Errorf("package %s is %d bytes, over the %d MiB limit", p.URI, len(p.Zip), MaxPackageBytes>>20)
	}
	ok, err := c.PackageExists(ctx, p.URI)
	if err != nil || ok {
		return false, err
	}
	path, _ := packagePath(p.URI)
	if err := c.do(ctx, http.MethodPut, path, bytes.NewReader(p.Zip), "", nil); err != nil {
		return false, fmt.Errorf("upload working_dir %s as %s: %w", p.Dir, p.URI, err)
	}
	return true, nil
}
