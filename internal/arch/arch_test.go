package arch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/mltrain/mltrain"

type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// floor is a package's storey: a package may import only storeys below its
// own, or its own room (its top folder: lab/verify may import lab).
// Programs (package main: cmd/mltrain, benchmark drivers) and the
// benchmarks under bench/ (they measure the whole product) are the top.
func floor(p pkg) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	switch {
	case p.Name == "main" || strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "bench/"):
		return 4
	case rel == "lab" || strings.HasPrefix(rel, "lab/"):
		return 3
	case strings.HasPrefix(rel, "internal/"):
		return 1
	}
	return 2 // compose, dockerfiles, datasets, workspace
}

func room(path string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	if strings.HasPrefix(rel, "internal/") {
		return "internal" // the ground floor is one room
	}
	top, _, _ := strings.Cut(rel, "/")
	return top
}

func packages(t *testing.T) map[string]pkg {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", out)
	all := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		all[p.ImportPath] = p
	}
	require.Contains(t, all, module+"/lab", "the graph was read from the repository root")
	return all
}

func TestDependenciesPointDown(t *testing.T) {
	all := packages(t)
	var bad []string
	for _, p := range all {
		for kind, imports := range map[string][]string{"imports": p.Imports, "tests import": append(p.TestImports, p.XTestImports...)} {
			for _, imp := range imports {
				q, ours := all[imp]
				if !ours || imp == p.ImportPath {
					continue
				}
				from, to := floor(p), floor(q)
				if to < from || (to == from && room(imp) == room(p.ImportPath)) {
					continue
				}
				bad = append(bad, p.ImportPath+" "+kind+" "+imp)
			}
		}
	}
	assert.Empty(t, bad, "dependencies must point down: cmd -> lab -> compose, dockerfiles, datasets, workspace -> internal")
}

// The rule the test enforces is the one described: these would be refused.
func TestTheRuleRefusesUpwardAndSidewaysImports(t *testing.T) {
	p := func(path string) pkg { return pkg{ImportPath: module + "/" + path, Name: filepath.Base(path)} }
	allowed := func(from, to string) bool {
		a, b := p(from), p(to)
		return floor(b) < floor(a) || (floor(a) == floor(b) && room(a.ImportPath) == room(b.ImportPath))
	}
	assert.False(t, allowed("compose", "lab"))
	assert.False(t, allowed("internal/images", "dockerfiles"))
	assert.False(t, allowed("internal/docker/dockertest", "lab/labtest"))
	assert.False(t, allowed("dockerfiles", "datasets/food11"), "siblings stay independent")
	assert.False(t, allowed("lab", "cmd/mltrain"))
	assert.True(t, allowed("lab/verify", "lab/exercise"))
	assert.True(t, allowed("lab/exercise", "lab"))
	assert.True(t, allowed("internal/doctor", "internal/gpu"))
	assert.True(t, allowed("cmd/mltrain", "lab"))
}

var forbidden = regexp.MustCompile(`\bos\.Exit\(|\blog\.Fatal|\bfmt\.Print|\bos\.Std(out|err)\b`)

// Nothing below cmd prints or exits: it returns errors and reports progress
// through internal/progress, and the command layer renders both.
func TestNothingBelowCmdPrintsOrExits(t *testing.T) {
	var bad []string
	for _, p := range packages(t) {
		if floor(p) == 4 {
			continue
		}
		for _, f := range p.GoFiles {
			fh, err := os.Open(filepath.Join(p.Dir, f))
			require.NoError(t, err)
			sc := bufio.NewScanner(fh)
			for n := 1; sc.Scan(); n++ {
				line := sc.Text()
				if code, _, _ := strings.Cut(line, "//"); forbidden.MatchString(code) {
					bad = append(bad, filepath.Join(p.Dir, f)+":"+strconv.Itoa(n)+": "+strings.TrimSpace(line))
				}
			}
			fh.Close()
		}
	}
	assert.Empty(t, bad)
}
