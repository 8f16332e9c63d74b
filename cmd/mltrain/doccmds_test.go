package main

// Every command the lab shows a person is collected and checked: a new
// command in a page, the guide or a hint without a checked or runnable
// form fails here.

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/state"
)

// docLabs are the labs the printed commands are written for: the default
// one, and one named by --project and --state-dir (whose flags every
// command must carry).
var docLabs = []nextstep.Commands{
	{},
	{Lab: state.Lab{Project: "mltrain2", StateDir: "/srv/labs/two"}, Ran: []string{"up", "--timeout", "5m"}},
}

// hintErrors are the errors whose next steps nextstep writes: the
// sentinels of compose/ and internal/, and its typed errors.
var hintErrors = []error{
	ready.ErrNotReady, compose.ErrNotRendered, compose.ErrImageMissing, compose.ErrPortTaken, compose.ErrNoGPURuntime,
	images.ErrNothingToSave, images.ErrBadArchive, images.ErrNoArchive,
	store.ErrNoEndpoint, store.ErrNoCredentials, store.ErrUnreachable, store.ErrCredentialsRefused, store.ErrRootRefused, store.ErrNoAdmin,
	ray.ErrNoAddress, ray.ErrUnreachable, ray.ErrAuthMissing, ray.ErrAuthInvalid,
	&images.UnavailableError{}, &images.UnavailableError{Policy: images.PullNever}, &images.BuildError{LabImage: true, Err: errBuild},
	&images.BuildError{Err: errBuild}, &images.CorruptArchiveError{Err: errBuild},
}

var errBuild = errors.New("a step failed")

// printedCommands are the commands mltrain prints: the guide (with each
// exercise's by-hand line) and the next steps of hintErrors, for each of
// docLabs.
func printedCommands(t *testing.T) []docCmd {
	t.Helper()
	var out []docCmd
	for _, c := range docLabs {
		out = append(out, collectText("mltrain lab guide ("+c.Line()+")", exercise.Guide(c, ""))...)
		for _, err := range hintErrors {
			h := c.Hint(err)
			require.NotEmpty(t, h, "nextstep writes a next step for %T %v", err, err)
			out = append(out, collectText("hint for "+err.Error(), h)...)
		}
	}
	return out
}

// sourceCommands are the commands the Go source below cmd/ names for next
// steps: each call that writes one (Commands.Line, clierr.Step, Next.Then,
// clierr.Plain) whose words are all constants, and each command a string
// literal quotes ('mltrain images load FILE').
func sourceCommands(t *testing.T) []docCmd {
	t.Helper()
	var out []docCmd
	for _, root := range []string{"../../lab", "../../internal", "../../compose", "."} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			out = append(out, fileCommands(path, f)...)
			return nil
		}))
	}
	return out
}

// fileCommands are f's commands (sourceCommands).
func fileCommands(path string, f *ast.File) []docCmd {
	consts := map[string]string{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := literal(vs.Values[i], nil); ok {
							consts[n.Name] = v
						}
					}
				}
			}
		}
	}
	var out []docCmd
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if v, ok := literal(n, nil); ok {
				for _, m := range quotedCmd.FindAllStringSubmatch(v, -1) {
					out = append(out, commands(path, m[1], true)...)
				}
			}
		case *ast.CallExpr:
			var name string
			switch fn := n.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "knownhosts" {
					return true
				}
			case *ast.Ident:
				name = fn.Name
			}
			args := n.Args
			switch name {
			case "Line", "Plain":
			case "Step", "Then":
				if len(args) == 0 {
					return true
				}
				args = args[1:]
			default:
				return true
			}
			words := []string{"mltrain"}
			for _, a := range args {
				v, ok := literal(a, consts)
				if !ok {
					return true // a word known only when it runs: the guide and hints cover those
				}
				words = append(words, v)
			}
			// A call may write the start of a line the rest of which is
			// known when it runs ("`mltrain lab <name>`"): a mention.
			if len(words) > 1 && n.Ellipsis == token.NoPos {
				out = append(out, docCmd{where: path, text: strings.Join(words, " "), words: fillWords(words), mention: true})
			}
		}
		return true
	})
	return out
}

// literal is e's value when it is a string literal or one of consts.
func literal(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := consts[e.Name]
		return v, ok
	}
	return "", false
}

// problems are the collected commands that fail their check.
func problems(cmds []docCmd) []string {
	var out []string
	for _, c := range cmds {
		if err := checkCommand(c); err != nil {
			out = append(out, c.where+": "+strings.Join(c.words, " ")+"\n    "+err.Error())
		}
	}
	return out
}

// Every command the pages, the guide, the by-hand lines and the next steps
// show parses as the program it names takes it.
func TestEveryCommandTheLabShowsIsChecked(t *testing.T) {
	pages, err := readPages()
	require.NoError(t, err)
	all := append(append(pages, printedCommands(t)...), sourceCommands(t)...)
	assert.Empty(t, problems(all), "commands the lab shows that would not run as written")
	assert.True(t, testDefinedIn("lab/backup", backupDocsTest), "lab/backup runs docs/BACKUP.md's check: %s", backupDocsTest)

	// The collector finds what it must: a page's block, prose, a synopsis,
	// the guide's by-hand lines, a hint, the source.
	seen := map[string]bool{}
	for _, c := range all {
		seen[strings.Join(c.words, " ")] = true
	}
	for _, want := range []string{
		"mltrain lab all --quick",
		"ray job submit --no-wait --runtime-env runtime.json --working-dir . --entrypoint-num-gpus 2 --entrypoint-num-cpus 8 -- python train.py --mode plain",
		"mltrain worker start 1",
		"mltrain --project mltrain2 --state-dir /srv/labs/two worker stop 1",
		"mltrain --project mltrain2 --state-dir /srv/labs/two up --timeout 20m",
		"mltrain images load lab-images.tar",
		"mltrain verify --junit out.xml",
		"mltrain completion fish",
	} {
		assert.True(t, seen[want], "collected: %s", want)
	}
}

// plantedDoc is a page with wrong commands among right ones.
const plantedDoc = "# A page\n\nRun `mltrain lab nosuch` first, then `mltrain status`.\n\n" +
	"```sh\nmltrain up --nosuchflag     # a flag up does not have\n" +
	"ray job submit --nosuchflag -- python train.py --mode plain\n" +
	"ray job submit --working-dir . -- python train.py --nosuch-train-flag\n" +
	"ray status                  # Jupyter's RAY_ADDRESS is the dashboard's URL\n" +
	"mltrain worker restart 1\nmltrain verify --only nosuchgroup\nfrobnicate --all\n" +
	"docker stop not-a-lab-container\nmake nosuch-target\n" +
	"python -c 'import ray; ray.init(); print(ray.nodes())'\n" +
	"curl -fsS http://example.com/x\n" +
	"curl -fsSL https://github.com/mltrain/mltrain/releases/download/v0.0.9/install.sh | sh\n" +
	"python3 -m http.server -d build 8000\n" +
	"curl -fsSL https://raw.githubusercontent.com/mltrain/mltrain/main/nosuch.sh | sh\n" +
	"curl -fsS http://<host>:3000/api/health\n" +
	"mltrain lab guide\n```\n\n| a | `mltrain logs [SERVICE] [-f\\|--nosuch]` |\n"

// The check fails on each planted wrong command, and only on those.
func TestAPlantedWrongCommandFailsTheCheck(t *testing.T) {
	cmds := collectMarkdown("planted.md", plantedDoc)
	var bad []string
	for _, c := range cmds {
		if checkCommand(c) != nil {
			bad = append(bad, strings.Join(c.words, " "))
		}
	}
	assert.ElementsMatch(t, []string{
		"mltrain lab nosuch",
		"mltrain up --nosuchflag",
		"ray job submit --nosuchflag -- python train.py --mode plain",
		"ray job submit --working-dir . -- python train.py --nosuch-train-flag",
		"ray status",
		"mltrain worker restart 1",
		"mltrain verify --only nosuchgroup",
		"frobnicate --all",
		"docker stop not-a-lab-container",
		"make nosuch-target",
		"python -c import ray; ray.init(); print(ray.nodes())",
		"curl -fsS http://example.com/x",
		"curl -fsSL https://github.com/mltrain/mltrain/releases/download/v0.0.9/install.sh",
		"python3 -m http.server -d build 8000",
		"curl -fsSL https://raw.githubusercontent.com/mltrain/mltrain/main/nosuch.sh",
		"mltrain logs --nosuch",
		"mltrain logs ray-head --nosuch",
	}, bad, "each planted command fails, the right ones pass")
	assert.NotEmpty(t, problems(cmds))
}
