package main

// Each collected command (doccmds_collect_test.go) checked by what it runs:
// mltrain against the real cobra tree (commands, flags, arguments, the
// values completion offers), ray against Ray's CLI (raytest.RayCLI, cited
// from Ray's source), train.py's flags against its argparse, make against
// the Makefile, a curl of this repository's files against the tree, docker
// lines against the lab's container names; the Python one-liners and the
// docker names run or resolve on a stand-in lab (doccmds_run_test.go). A
// command of any other program fails unless externalCommands says why it
// is not run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// backupDocsTest runs docs/BACKUP.md's shell check of a backup.
const backupDocsTest = "TestTheDocsCheckOfABackupRuns"

// externalCommands are programs the pages name that the tests do not run,
// and why: each is the host's own tool, named as its manual does.
var externalCommands = map[string]string{
	"sudo":       "host administration (iptables, nvidia-ctk, systemctl): changes the host, never run by a test",
	"ssh-keygen": "OpenSSH's own tool, run by the instructor",
	"ssh-add":    "OpenSSH's own tool, run by the instructor",
	"nvidia-smi": "the GPU driver's tool, inside a GPU worker (none on a test host)",
	"rocm-smi":   "the GPU driver's tool, inside a GPU worker (none on a test host)",
	"go":         "the Go toolchain, for developers (`go test` is CI itself)",
	"echo":       "the shell's own",
	"sh":         "the shell's own",
	"grep":       "the shell's own (filtering dmesg in a driver hint)",
	"export":     "the shell's own (setting AWS_* before an S3 backup)",
	"scp":        "OpenSSH's own tool, run on the student's computer to copy a backup off the node",
	// docs/BACKUP.md's check of a backup with standard tools, run as written
	// on a real backup by lab/backup's test (backupDocsTest, checked to exist).
	"tar":       "run by lab/backup's " + backupDocsTest,
	"mkdir":     "run by lab/backup's " + backupDocsTest,
	"cd":        "run by lab/backup's " + backupDocsTest,
	"jq":        "run by lab/backup's " + backupDocsTest,
	"sha256sum": "run by lab/backup's " + backupDocsTest,
}

// checkCommand is what is wrong with c, or nil.
func checkCommand(c docCmd) error {
	switch p := c.words[0]; {
	case p == "mltrain":
		return checkMltrain(c.words, c.mention)
	case p == "ray":
		if err := raytest.CheckRayLine(c.words, plan.Plan{}.JupyterRayAddress(), c.mention); err != nil {
			return err
		}
		if i := slices.Index(c.words, "--"); i > 0 && i+1 < len(c.words) { // the job's entrypoint
			return checkCommand(docCmd{words: c.words[i+1:]})
		}
		return nil
	case p == "make":
		return checkMake(c.words)
	case p == "python" || p == "python3":
		return checkPython(c.words)
	case p == "docker":
		return checkDocker(c.words)
	case p == "curl":
		return checkCurl(c.words)
	case externalCommands[p] != "":
		return nil
	default:
		return fmt.Errorf("%s: no runnable or checked form for this program (run it in doccmds_run_test.go, check it here, or say why not in externalCommands)", p)
	}
}

// checkMltrain parses words against a fresh cobra tree, as mltrain would
// before running anything: the command, its flags, its arguments, and the
// values its completion offers (exercises, services, worker actions,
// verify groups). A mention may leave out the arguments.
func checkMltrain(words []string, mention bool) error {
	a := newApp(io.Discard, io.Discard)
	a.connect = func(context.Context) (docker.Engine, error) { return nil, errors.New("no engine in a command's check") }
	root := a.root()
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return err
	}
	err = cmd.ParseFlags(rest)
	if errors.Is(err, pflag.ErrHelp) {
		return nil // `mltrain X --help`: cobra prints X's help
	}
	if err != nil && mention && strings.Contains(err.Error(), "needs an argument") { // prose: "`--url`"
		err = cmd.ParseFlags(append(rest, "x"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	cmd.SetContext(context.Background())
	if a.stateDir == "" { // completion falls back on the lab's state: none, the usual two workers
		a.stateDir = "/nonexistent/mltrain-doc-check"
	}
	args := cmd.Flags().Args()
	if err := cmd.ValidateArgs(args); err != nil && !(mention && leftOut(cmd, args)) {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if cmd.ValidArgsFunction != nil {
		for i, arg := range args {
			if err := offered(cmd.CommandPath()+" argument", arg, func() ([]string, cobra.ShellCompDirective) {
				return cmd.ValidArgsFunction(cmd, args[:i], "")
			}); err != nil {
				return err
			}
		}
	}
	var flagErr error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		fn, ok := cmd.GetFlagCompletionFunc(f.Name)
		if !ok || flagErr != nil {
			return
		}
		values := strings.Split(f.Value.String(), ",")
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if err := offered(cmd.CommandPath()+" --"+f.Name, v, func() ([]string, cobra.ShellCompDirective) { return fn(cmd, args, "") }); err != nil {
				flagErr = err
			}
		}
	})
	if flagErr != nil {
		return flagErr
	}
	return service.CheckProject(a.project)
}

// leftOut: args are the first arguments of a valid line, the rest left
// out (as a mention may).
func leftOut(cmd *cobra.Command, args []string) bool {
	padded := slices.Clone(args)
	for range 3 {
		padded = append(padded, "x")
		if cmd.ValidateArgs(padded) == nil {
			return true
		}
	}
	return false
}

// offered fails when completion offers values and v is none of them.
func offered(what, v string, complete func() ([]string, cobra.ShellCompDirective)) error {
	cands, dir := complete()
	if len(cands) == 0 || dir&cobra.ShellCompDirectiveNoFileComp == 0 {
		return nil // a free value (a file, a bundle)
	}
	var names []string
	for _, c := range cands {
		n, _, _ := strings.Cut(c, "\t")
		names = append(names, strings.TrimSuffix(n, ","))
	}
	if slices.Contains(names, v) {
		return nil
	}
	return fmt.Errorf("%s: %q is not one of %s", what, v, strings.Join(names, ", "))
}

// makeTarget is a target line of the Makefile.
var makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)

func checkMake(words []string) error {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		return err
	}
	var targets []string
	for _, m := range makeTarget.FindAllStringSubmatch(string(b), -1) {
		targets = append(targets, m[1])
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && !slices.Contains(targets, w) {
			return fmt.Errorf("make %s: the Makefile has no such target", w)
		}
	}
	return nil
}

// trainFlag is an argparse option of workspace/train.py.
var trainFlag = regexp.MustCompile(`add_argument\(\s*"(--[a-z0-9-]+)"(.*)`)

// checkPython: a one-liner (-c) talks to the dashboard's REST API and runs
// on a stand-in lab, never through a live Ray (ray.init would connect as
// Ray Client with Jupyter's http:// RAY_ADDRESS); `python train.py ...`
// takes train.py's own flags.
func checkPython(words []string) error {
	if len(words) >= 3 && words[1] == "-c" {
		if strings.Contains(words[2], "import ray") || strings.Contains(words[2], "ray.init") {
			return errors.New("python -c: needs a live Ray: write the REST call or the Ray CLI line that does the same")
		}
		return nil
	}
	if len(words) == 6 && words[1] == "-m" && words[2] == "http.server" && words[3] == "-d" && words[4] == "dist" {
		return nil // the standard library's file server on dist/, as release's TestInstallFromDistServedAsIs serves it
	}
	if len(words) >= 2 && words[1] == "train.py" {
		return checkTrainPy(words[2:])
	}
	return fmt.Errorf("%s: no checked form for this Python command", strings.Join(words, " "))
}

func checkTrainPy(args []string) error {
	b, err := os.ReadFile("../../workspace/train.py")
	if err != nil {
		return err
	}
	takes := map[string]bool{}
	for _, m := range trainFlag.FindAllStringSubmatch(string(b), -1) {
		takes[m[1]] = !strings.Contains(m[2], `action="store_true"`)
	}
	for i := 0; i < len(args); i++ {
		v, ok := takes[args[i]]
		if !ok {
			return fmt.Errorf("train.py has no option %s", args[i])
		}
		if v {
			i++
			if i >= len(args) || strings.HasPrefix(args[i], "--") {
				return fmt.Errorf("train.py %s needs a value", args[i-1])
			}
		}
	}
	return nil
}

// dockerVerbs are the docker commands the pages may name, with the
// position of the container they act on (-1: none to resolve).
var dockerVerbs = map[string]int{"exec": 1, "stop": 1, "kill": 1, "start": 1, "restart": 1, "logs": 1, "rm": 1, "inspect": 1,
	"compose": -1, "network": -1, "save": -1, "load": -1, "context": -1, "info": -1, "system": -1, "image": -1}

// checkDocker: a known verb, and a container that is one of the lab's
// (the stand-in run resolves it on the engine).
func checkDocker(words []string) error {
	if len(words) < 2 {
		return errors.New("docker: no command")
	}
	if _, ok := dockerVerbs[words[1]]; !ok {
		return fmt.Errorf("docker %s: not a docker command the pages are checked for", words[1])
	}
	// %s: a container named when the hint is written
	if name := dockerContainer(words); name != "" && !strings.Contains(name, "%") && !isLabContainer(name) {
		return fmt.Errorf("docker %s %s: not a container of the lab", words[1], name)
	}
	return nil
}

// dockerContainer is the container a docker line names, or "".
func dockerContainer(words []string) string {
	pos := dockerVerbs[words[1]]
	var args []string
	for _, w := range words[2:] {
		if !strings.HasPrefix(w, "-") {
			args = append(args, w)
		}
	}
	if pos == -1 || len(args) == 0 {
		return ""
	}
	return args[0] // exec's first argument after its flags, too
}

// isLabContainer: name is a service's container in the default lab, or
// <project>-<service> in another.
func isLabContainer(name string) bool {
	for _, s := range labServiceNames() {
		if name == s || strings.HasSuffix(name, "-"+s) {
			return true
		}
	}
	return false
}

func labServiceNames() []string {
	return service.Names([]string{service.WorkerService(0), service.WorkerService(1)}, false)
}

// installURL is how the pages fetch a file of this repository.
var installURL = regexp.MustCompile(`^https://raw\.githubusercontent\.com/mltrain/mltrain/main/(.+)$`)

// releaseURL is how the pages fetch a released file: install.sh's own
// download URL, or a mirror of dist/ (<url>/<version>/<file>).
var releaseURL = regexp.MustCompile(`^(https://github\.com/mltrain/mltrain/releases/download|http://HOST:8000)/(v[^/]+)/(install\.sh)$`)

// checkCurl: a URL of this repository names a file it has; a release URL
// is the one install.sh itself names (a mirror of dist/ is installed from
// by release's TestInstallFromDistServedAsIs); any other is one of the
// lab's (<host> and a port of the lab), run on the stand-in.
func checkCurl(words []string) error {
	for _, w := range words[1:] {
		if m := releaseURL.FindStringSubmatch(w); m != nil {
			return checkReleaseURL(w, m[1], m[2])
		}
		if m := installURL.FindStringSubmatch(w); m != nil {
			if _, err := os.Stat("../../" + m[1]); err != nil {
				return fmt.Errorf("curl %s: the repository has no %s", w, m[1])
			}
			return nil
		}
		if strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://") {
			if _, ok := labPortName(w); !ok {
				return fmt.Errorf("curl %s: neither this repository's file nor a lab address (<host>:<a lab port>) the stand-in can answer", w)
			}
			return nil
		}
	}
	return errors.New("curl: no URL")
}

// checkReleaseURL: GitHub's URL is install.sh's default download URL, at
// the version its header installs; the mirror's is dist/'s layout, which
// release's TestInstallFromDistServedAsIs installs from.
func checkReleaseURL(w, base, version string) error {
	b, err := os.ReadFile("../../install.sh")
	if err != nil {
		return fmt.Errorf("curl %s: %w", w, err)
	}
	script := string(b)
	if base == "http://HOST:8000" {
		if !testDefinedIn("release", "TestInstallFromDistServedAsIs") {
			return fmt.Errorf("curl %s: no test installs from dist/ served as is", w)
		}
		return nil
	}
	if !strings.Contains(script, "MLTRAIN_DOWNLOAD_URL:-"+base+"}") {
		return fmt.Errorf("curl %s: install.sh downloads from elsewhere by default", w)
	}
	if !strings.Contains(script, "# "+"  curl -fsSL "+w) {
		return fmt.Errorf("curl %s: install.sh's header names another version than %s", w, version)
	}
	return nil
}

// testDefinedIn: a test file of the package in dir (from the repository
// root) has a test function named name.
func testDefinedIn(dir, name string) bool {
	files, _ := filepath.Glob("../../" + dir + "/*_test.go")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "\nfunc "+name+"(t *testing.T)") {
			return true
		}
	}
	return false
}

// labPortName is the name of the lab port a URL at <host> uses.
func labPortName(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() != fillPlaceholders("<host>") {
		return "", false
	}
	for name, p := range service.DefaultPorts() {
		if strconv.Itoa(p) == u.Port() {
			return name, true
		}
	}
	return "", false
}
