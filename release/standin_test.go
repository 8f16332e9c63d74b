package release

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// The stand-in for the official Go image (no registry is reachable where
// tests run) is assembled from this machine's own toolchain, as one
// `docker import` of a tarball:
//   - GOROOT (`go env GOROOT`, e.g. /usr/local/go), with its bin on PATH;
//   - every file dpkg lists for gcc, libc6-dev, coreutils and dash and the
//     installed packages they depend on, recursively (the C toolchain cgo
//     needs, sh, chown), copied as they are on the host;
//   - usr-merge's top-level links (/bin -> usr/bin ...), an empty /tmp, the
//     host's CA bundle.
//
// Like the official image it is a Debian userland with Go and gcc, runs as
// root and has `go` on PATH. It is tagged by a hash of the Go version and
// the packages' versions, so a CI machine builds it once.
var standinRoots = []string{"gcc", "libc6-dev", "coreutils", "dash"}

var (
	standinOnce sync.Once
	standinTag  string
	standinErr  error
)

// GoStandinImage returns the tag of the stand-in Go image, building it on
// first use.
func GoStandinImage(t *testing.T) string {
	t.Helper()
	dockertest.Engine(t) // skips without an engine, fails under CI
	standinOnce.Do(func() { standinTag, standinErr = buildStandin(t) })
	if standinErr != nil {
		t.Fatalf("stand-in Go image: %v", standinErr)
	}
	return standinTag
}

func buildStandin(t *testing.T) (string, error) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	pkgs, versions, err := dpkgClosure(standinRoots)
	if err != nil {
		return "", err
	}
	tag := fmt.Sprintf("mltrain-test/golang-standin:%x", sha256.Sum256([]byte(runtime.Version()+"\n"+versions)))[:48]
	if exec.Command("docker", "image", "inspect", tag).Run() == nil {
		return tag, nil
	}
	files, err := exec.Command("dpkg-query", append([]string{"-L"}, pkgs...)...).Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-query -L: %w", err)
	}
	paths := []string{"/etc/ssl/certs/ca-certificates.crt"}
	for _, l := range strings.Split(string(files), "\n") {
		if strings.HasPrefix(l, "/") {
			paths = append(paths, l)
		}
	}
	root := strings.TrimSpace(string(goroot))
	t.Logf("building %s from %s and %d packages' files (once per toolchain)", tag, root, len(pkgs))
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := writeRootfs(pw, root, paths)
		pw.CloseWithError(err)
		wrote <- err
	}()
	cmd := exec.Command("docker", "import", "--change", "ENV PATH="+root+"/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"--change", "LABEL "+dockertest.TestLabel+"=1", "-", tag)
	cmd.Stdin = pr
	if out, err := cmd.CombinedOutput(); err != nil {
		pr.CloseWithError(err)
		<-wrote
		return "", fmt.Errorf("docker import: %w\n%s", err, out)
	}
	if err := <-wrote; err != nil { // docker may have imported a cut tarball
		_ = exec.Command("docker", "image", "rm", tag).Run()
		return "", fmt.Errorf("write the stand-in's files: %w", err)
	}
	return tag, nil
}

// dpkgClosure returns the installed packages roots depend on, recursively
// (the first installed one of alternatives; virtual ones skipped), and their
// "name version" lines, sorted.
func dpkgClosure(roots []string) ([]string, string, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\t${Pre-Depends}, ${Depends}\n").Output()
	if err != nil {
		return nil, "", fmt.Errorf("dpkg-query: %w", err)
	}
	type pkg struct{ version, deps string }
	installed := map[string]pkg{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "\t")
		if len(f) == 4 && strings.HasPrefix(f[2], "ii") {
			installed[f[0]] = pkg{f[1], f[3]}
		}
	}
	seen := map[string]bool{}
	var walk func(string) error
	walk = func(name string) error {
		if seen[name] {
			return nil
		}
		p, ok := installed[name]
		if !ok {
			return fmt.Errorf("package %s is not installed here (apt-get install %s)", name, name)
		}
		seen[name] = true
		for _, dep := range strings.Split(p.deps, ",") {
			for _, alt := range strings.Split(dep, "|") {
				f := strings.Fields(alt) // "libc6:any (>= 2.36)"
				if len(f) == 0 {
					continue
				}
				n, _, _ := strings.Cut(f[0], ":")
				if _, ok := installed[n]; ok {
					if err := walk(n); err != nil {
						return err
					}
					break
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return nil, "", err
		}
	}
	var names, lines []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		lines = append(lines, n+" "+installed[n].version)
	}
	return names, strings.Join(lines, "\n"), nil
}

// writeRootfs writes a tar of goroot and paths as they are on this host.
// Paths are resolved through their directories' links (usr-merge's /bin ->
// usr/bin is written as the link it is), so the tree matches the host's.
func writeRootfs(w io.Writer, goroot string, paths []string) error {
	tw := tar.NewWriter(w)
	done := map[string]bool{}
	add := func(p string) error {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return nil // listed by dpkg, gone from disk
		}
		p = filepath.Join(dir, filepath.Base(p))
		if p == "/" || done[p] {
			return nil
		}
		done[p] = true
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = strings.TrimPrefix(p, "/"), 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	}
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if fi, err := os.Lstat(top); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := add(top); err != nil {
				return err
			}
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}); err != nil {
		return err
	}
	for _, p := range paths {
		if err := add(p); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(goroot, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return add(p)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
