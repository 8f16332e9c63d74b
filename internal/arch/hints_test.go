package arch

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// mltrainCommand is a command line of mltrain in text: quoted as hints
// quote commands ('mltrain x', `mltrain x`), or "mltrain" followed by one
// of its commands or a flag. Prose about the program ("mltrain builds",
// "mltrain-ray-head") is not one.
var mltrainCommand = regexp.MustCompile("['`]mltrain +[a-z-]|\\bmltrain +(--[a-z]|(" +
	"version|gpus|doctor|render|build|images|up|down|status|logs|worker|credentials|join-token|join|data|lab|verify|completion)\\b)")

// belowLab are the packages that say what went wrong and leave what to type
// to the layer that knows the user's command (nextstep.Commands).
var belowLab = []string{"compose", "internal/images", "internal/store", "internal/ray", "internal/docker"}

// TestNoMltrainCommandBelowLab fails when a non-test Go file of belowLab
// names an mltrain command outside a comment: a hint written there names
// a command without knowing which one the user ran (join's failures said
// "run 'mltrain up' again") or with which --project and --state-dir.
func TestNoMltrainCommandBelowLab(t *testing.T) {
	all := packages(t)
	var bad []string
	seen := map[string]bool{}
	for _, p := range all {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if !under(rel, belowLab) {
			continue
		}
		seen[rel] = true
		for _, f := range p.GoFiles {
			bad = append(bad, commandsIn(t, filepath.Join(p.Dir, f))...)
		}
	}
	for _, want := range belowLab {
		assert.True(t, seen[want], "%s was read", want)
	}
	assert.Empty(t, bad, "say what went wrong (a sentinel or typed error naming the object); nextstep.Commands.Hint says what to type")
}

func under(rel string, roots []string) bool {
	for _, r := range roots {
		if rel == r || strings.HasPrefix(rel, r+"/") {
			return true
		}
	}
	return false
}

// commandsIn lists the lines of file outside comments that name an
// mltrain command.
func commandsIn(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		code, _, _ := strings.Cut(sc.Text(), "//")
		if mltrainCommand.MatchString(code) {
			out = append(out, file+":"+strconv.Itoa(n)+": "+strings.TrimSpace(sc.Text()))
		}
	}
	return out
}

func TestMltrainCommandPattern(t *testing.T) {
	for _, s := range []string{`"run 'mltrain up' again"`, "`mltrain images load FILE`", `"then mltrain status"`, `"(mltrain --port NAME=PORT)"`, `"mltrain join-token"`} {
		assert.Regexp(t, mltrainCommand, s)
	}
	for _, s := range []string{`"mltrain builds images itself"`, `"mltrain-ray-head"`, `"which mltrain does not apply"`, `"~/.mltrain/mltrain/compose.yaml"`} {
		assert.NotRegexp(t, mltrainCommand, s)
	}
}

// TestUsageHintsAreWrittenWhereTheCommandIsKnown fails when a package below
// cmd/ calls clierr.Usage: its hint is "run '<command> --help'", and only
// the command layer knows the command (lab/backup once wrote "run ' --help'").
// Below cmd/ a usage error is clierr.WithCode(err, clierr.ExitUsage).
func TestUsageHintsAreWrittenWhereTheCommandIsKnown(t *testing.T) {
	var bad []string
	for _, p := range packages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if rel == "cmd/mltrain" || rel == "internal/clierr" {
			continue
		}
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			for n, line := range strings.Split(string(b), "\n") {
				if code, _, _ := strings.Cut(line, "//"); strings.Contains(code, "clierr.Usage(") {
					bad = append(bad, rel+"/"+f+":"+strconv.Itoa(n+1)+": "+strings.TrimSpace(line))
				}
			}
		}
	}
	assert.Empty(t, bad, "below cmd/, mark a usage error with clierr.WithCode(err, clierr.ExitUsage); the command adds its --help")
}
