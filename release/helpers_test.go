// Package release tests how mltrain reaches a lab node: make build without
// Go on the host (in the Go image through Docker), the release archives
// make dist writes with GoReleaser, and install.sh installing from them.
// They run real builds and the real engine, so CI runs them all (CI=true
// never skips them).
package release

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the checkout this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod above the release package: %v", err)
	}
	return dir
}

// pathWithout returns a PATH of one temporary directory linking every
// command on $PATH except names: a host where those are not installed.
func pathWithout(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if slices.Contains(names, e.Name()) {
				continue
			}
			link := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(link); err == nil {
				continue // an earlier PATH entry wins, as in a shell
			}
			if fi, err := os.Stat(filepath.Join(d, e.Name())); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(filepath.Join(dir, n)); err == nil {
			t.Fatalf("%s is still on the PATH: %s", n, p)
		}
	}
	return dir
}

// run runs name args in dir with env added, returning combined output.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyCheckout copies the checkout's files (tracked, and untracked ones git
// does not ignore) into a new directory, so a test can build in it without
// touching the checkout's bin/ or dist/.
func copyCheckout(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	out, err := runIn(t, root, nil, "git", "ls-files", "-z", "-co", "--exclude-standard")
	if err != nil {
		t.Fatalf("git ls-files: %v\n%s", err, out)
	}
	dst := t.TempDir()
	for _, rel := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(root, rel))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// maxGLIBC is the newest GLIBC symbol version the ELF binary needs.
func maxGLIBC(t *testing.T, bin string) string {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v (a cgo binary is dynamically linked)", bin, err)
	}
	best := ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && (best == "" || versionLess(best, v)) {
			best = v
		}
	}
	return best
}

// versionLess compares dotted numbers: 2.9 < 2.34.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
