// Package docs holds the repository's prose; its test keeps the Ray fidelity
// ledger (ray-fidelity.md) honest: every row cites Ray's source and names
// tests that exist.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	testName = regexp.MustCompile(`\bTest[A-Z]\w*`)
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Z]\w*)\(`)
	raySrc   = regexp.MustCompile("`(python/ray|src/ray)/[^`]+`")
)

// row is one ledger row: its behaviour and its cells.
type row struct {
	behaviour string
	cells     []string
}

// rows reads the ledger's table (the header and separator skipped).
func rows(ledger string) []row {
	var out []row
	for _, line := range strings.Split(ledger, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Behaviour") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		out = append(out, row{behaviour: cells[0], cells: cells})
	}
	return out
}

// problems lists what is wrong with the ledger's rows given the test
// functions the repository defines.
func problems(ledger string, defined map[string]bool) []string {
	var out []string
	for _, r := range rows(ledger) {
		if len(r.cells) != 6 {
			out = append(out, "row has "+strconv.Itoa(len(r.cells))+" cells, want 6: "+r.behaviour)
			continue
		}
		if !raySrc.MatchString(r.cells[1]) {
			out = append(out, "row cites no Ray source path: "+r.behaviour)
		}
		names := testName.FindAllString(r.cells[5], -1)
		if len(names) == 0 && !strings.Contains(r.cells[5], "none yet") {
			out = append(out, "row names no test (nor says \"none yet\"): "+r.behaviour)
		}
		for _, n := range names {
			if !defined[n] {
				out = append(out, "row names "+n+", which no _test.go file defines: "+r.behaviour)
			}
		}
	}
	return out
}

// definedTests finds every `func TestXxx(` in the repository's test files.
func definedTests(t *testing.T, root string) map[string]bool {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRayFidelityLedgerNamesExistingTests(t *testing.T) {
	b, err := os.ReadFile("ray-fidelity.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := definedTests(t, "..")
	if len(rows(string(b))) < 10 {
		t.Fatalf("the ledger has %d rows: the table did not parse", len(rows(string(b))))
	}
	for _, p := range problems(string(b), defined) {
		t.Error(p)
	}
}

func TestLedgerCheckCatchesAMissingTestAndAMissingSource(t *testing.T) {
	ledger := "| Behaviour | Ray source | Newest | Course | Doubles | Tests |\n|---|---|---|---|---|---|\n" +
		"| a | `python/ray/x.py`: f | same | none | model | TestThere, TestGone |\n" +
		"| b | nowhere | same | none | model | TestThere |\n" +
		"| c | `src/ray/y.cc` | same | none | model | none yet |\n"
	got := problems(ledger, map[string]bool{"TestThere": true})
	want := []string{
		"row names TestGone, which no _test.go file defines: a",
		"row cites no Ray source path: b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
