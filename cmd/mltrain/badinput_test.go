package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// badInput is one wrong command line as a user types it, run through the
// built mltrain: what it must say (the Error text and the Next line, as
// regexps over the whole text), its exit code, and that it created nothing.
type badInput struct {
	name string
	// args are the command line; dir is replaced by the row's state dir
	// (which does not exist before, unless setup makes it).
	args  []string
	env   []string
	setup func(t *testing.T, dir string) // what exists before the command
	// readOnly runs the command with the state dir a read-only mount.
	readOnly bool
	code     int
	err      string // regexp of the Error text
	next     string // regexp of the Next line
	// leaves are the state dir entries a failing command may leave for the
	// re-run (up's credentials and compose files); nothing else may appear.
	leaves []string
	// project and volume are the engine names to watch (project "mltrain" by default).
	project, volume string
}

// Every bad input of issue 13 gets a clear error naming the problem and the
// next command, the exit code for its kind, and leaves no file, volume,
// network or container behind.
func TestBadInputsSayWhatAndWhatNextAndCreateNothing(t *testing.T) {
	s := newStandin(t) // the real engine, and a stand-in lab's images and ports
	eng := s.eng
	long := strings.Repeat("a", 300)
	const flagsRE = `--project ncaudit --state-dir \S+`
	dead := "unix://" + filepath.Join(t.TempDir(), "dead.sock")
	gpusArray := filepath.Join(t.TempDir(), "gpus.json")
	require.NoError(t, os.WriteFile(gpusArray, []byte("[]\n"), 0o644))
	noGPUs := filepath.Join(t.TempDir(), "gpus.json")
	require.NoError(t, os.WriteFile(noGPUs, []byte(`{"gpus":[],"problems":[]}`), 0o644))

	rows := []badInput{
		// Usage errors: exit 2, the help or the fix as Next.
		{name: "extra argument", args: []string{"up", "extra"}, code: 2,
			err: `^mltrain up takes no arguments \(got "extra"\)$`, next: `^run 'mltrain up --help'$`},
		{name: "unknown flag", args: []string{"status", "--bogus"}, code: 2,
			err: `^mltrain status: unknown flag: --bogus$`, next: `^run 'mltrain status --help'$`},
		{name: "unknown verify group", args: []string{"verify", "--only", "gpus"}, code: 2,
			err: `^--only "gpus" is not a check group$`, next: `^use one or more of: host, containers, gpu, ray, minio, data, metrics, jupyter, exercises \(e\.g\. --only ray,minio\)$`},
		{name: "unknown worker action", args: []string{"worker", "restart", "1"}, code: 2,
			err: `^unknown worker action "restart"$`, next: `^use 'mltrain worker stop N' or 'mltrain worker start N'$`},
		{name: "credentials takes no argument", args: []string{"credentials", "ray"}, code: 2,
			err: `^mltrain credentials takes no arguments \(got "ray"\)$`, next: `^run 'mltrain credentials --help'$`},
		// Item 4: --project.
		{name: "project of 300 characters", args: []string{"up", "--project", long, "--state-dir", "dir"}, code: 2,
			err:  `^--project is 300 characters long; at most 48 keep the names derived from it legal \(a container <project>-ray-worker-N is a DNS name of at most 63\)$`,
			next: `^use a name of at most 48 characters, e\.g\. --project aaaaaaaaaaaa$`},
		{name: "project of 300 characters, default state dir", args: []string{"status", "--project", long}, code: 2,
			err: `^--project is 300 characters long`, next: `^use a name of at most 48 characters`},
		{name: "project not a Compose name", args: []string{"logs", "--project", "Lab_One"}, code: 2,
			err:  `^--project "Lab_One" is not a valid Compose project name$`,
			next: `^use lowercase letters, digits, '-' and '_', starting with a letter or digit, e\.g\. --project mltrain2$`},
		// Item 5: the next step names the lab the command was given.
		{name: "verify of a lab not up", args: []string{"verify", "--project", "ncaudit", "--state-dir", "dir"}, code: 1, project: "ncaudit",
			err:  `^no lab state at \S+/state\.json$`,
			next: `^run 'mltrain ` + flagsRE + ` up' first \(or pass --state-dir / --project of the lab you mean\)$`},
		// Item 9: credentials shows, never creates.
		{name: "credentials of a lab never up", args: []string{"credentials", "--project", "ncaudit", "--state-dir", "dir"}, code: 1, project: "ncaudit",
			err:  `^the lab's credentials file \S+/credentials\.json is missing$`,
			next: `^run 'mltrain ` + flagsRE + ` up' to re-create the lab with new credentials \('mltrain ` + flagsRE + ` down --volumes' first .*\), or pass the --state-dir/--project of the lab you mean$`},
		// Item 6: up and render refuse a read-only state dir, saying what fits.
		{name: "up on a read-only state dir", args: []string{"up", "--state-dir", "dir"}, readOnly: true, code: 1,
			setup: func(t *testing.T, dir string) { require.NoError(t, os.MkdirAll(dir, 0o700)) },
			err:   `^state dir \S+ is not writable: open \S+/\.write-test-\d+: read-only file system$`,
			next:  `^\S+ is on a read-only filesystem: copy its files to a writable directory \(credentials\.json holds the lab's secrets\) and use that with --state-dir DIR; status, logs and verify still read it where it is$`},
		{name: "render --out a read-only dir", args: []string{"render", "--out", "dir", "--gpus-from", noGPUs, "--cpus", "4", "--memory", "8g"}, readOnly: true, code: 1,
			setup: func(t *testing.T, dir string) { require.NoError(t, os.MkdirAll(dir, 0o700)) },
			err:   `^state dir \S+ is not writable: open \S+/\.write-test-\d+: read-only file system$`,
			next:  `^\S+ is on a read-only filesystem: copy its files to a writable directory`},
		// Item 11: --gpus-from of another shape; a dead engine and what pointed at it.
		{name: "gpus-from holding []", args: []string{"render", "--gpus-from", gpusArray, "--cpus", "4", "--memory", "8g", "--state-dir", "dir"}, code: 1,
			err:  `^--gpus-from \S+ holds a JSON array, not the object 'mltrain gpus --json' writes: \{"gpus": \[\.\.\.\], "problems": \[\.\.\.\]\}$`,
			next: `^produce it on the lab host with 'mltrain gpus --json > FILE'$`},
		{name: "DOCKER_HOST at a dead engine", args: []string{"status", "--state-dir", "dir"}, env: []string{"DOCKER_HOST=" + dead}, code: 1,
			err:  `^docker engine at ` + regexp.QuoteMeta(dead) + ` is not reachable: .*no such file or directory$`,
			next: `^DOCKER_HOST=` + regexp.QuoteMeta(dead) + ` points mltrain at that engine: start it or fix DOCKER_HOST, or 'unset DOCKER_HOST' to use this host's Docker; then run 'mltrain --state-dir \S+ doctor'$`},
		{name: "docker context at a dead engine", args: []string{"logs", "--state-dir", "dir"}, env: []string{"DOCKER_CONFIG=" + dockerContext(t, "lab-remote", dead)}, code: 1,
			err:  `^docker engine at ` + regexp.QuoteMeta(dead) + ` is not reachable`,
			next: `^the current docker context "lab-remote" points mltrain at ` + regexp.QuoteMeta(dead) + `: start that engine, or run 'docker context use default' to use this host's Docker; then run 'mltrain --state-dir \S+ doctor'$`},
		// Item 12: no registry: the DNS failure once, both ways to have images.
		{name: "up where the registry cannot be resolved", args: append(s.upArgs("--pull", "missing", "--image-minio", "registry.invalid/minio:1"), "--state-dir", "dir"),
			env: s.env, code: 1, project: s.project, volume: s.opts.DataVolume,
			leaves: []string{state.CredentialsFile, "compose.yaml", "grafana", "prometheus", "workspace"},
			err:    `^could not pull 1 image\(s\):\n  registry registry\.invalid: this host cannot resolve its name \(lookup registry\.invalid( on \S+)?: [a-z ]+\); not pulled: registry\.invalid/minio:1$`,
			next: `^preload the images: 'mltrain images load FILE' \(after 'mltrain images save FILE' on a node that has them\), or give 'mltrain --project \S+ --state-dir \S+ up' images this host already has: ` +
				`--image-head REF, --image-worker REF, --image-minio REF, --image-prometheus REF, --image-grafana REF, --image-jupyter REF, then run again$`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			home := t.TempDir()
			if r.setup != nil {
				r.setup(t, dir)
			}
			args := make([]string, len(r.args))
			for i, a := range r.args {
				if a == "dir" {
					a = dir
				}
				args[i] = a
			}
			project := r.project
			if project == "" {
				project = service.DefaultProject
			}
			before, beforeEng := snapshot(t, dir), engineObjects(t, eng, project, r.volume)
			ro := ""
			if r.readOnly {
				ro = dir
			}
			stdout, stderr, code := runBin(t, binRun{args: args, env: append(append([]string(nil), r.env...), "HOME="+home), readOnly: ro})

			assert.Equal(t, r.code, code, "exit code; stderr:\n%s", stderr)
			e, next := nextLines(stderr)
			assert.Regexp(t, r.err, e, "the Error text")
			assert.Regexp(t, r.next, next, "the Next line")
			assert.Equal(t, 1, strings.Count(stderr, "Error: "), "said once")
			assert.Empty(t, stdout, "a refused command prints no result")

			after := snapshot(t, dir)
			if len(r.leaves) > 0 && len(before) == 0 {
				delete(after, ".") // the dir made for what the re-run reuses
			}
			for _, l := range r.leaves {
				for k := range after {
					if k == l || strings.HasPrefix(k, l+string(filepath.Separator)) {
						delete(after, k)
					}
				}
			}
			assert.Equal(t, before, after, "no file was created, changed or removed in the state dir")
			entries, _ := os.ReadDir(home)
			assert.Empty(t, entries, "nothing in HOME (~/.mltrain)")
			assert.Equal(t, beforeEng, engineObjects(t, eng, project, r.volume), "no container, volume or network was created")
		})
	}
}

// engineObjects lists the containers, volumes and networks of project (and
// the named volume), sorted, for before/after comparisons.
func engineObjects(t *testing.T, eng docker.Engine, project, volume string) []string {
	t.Helper()
	ctx := context.Background()
	filter := map[string]string{labels.Project: project}
	var out []string
	cs, err := eng.ContainerList(ctx, filter)
	require.NoError(t, err)
	for _, c := range cs {
		out = append(out, "container "+c.Name)
	}
	vs, err := eng.VolumeList(ctx, filter)
	require.NoError(t, err)
	for _, v := range vs {
		out = append(out, "volume "+v.Name)
	}
	if volume != "" {
		if _, err := eng.VolumeInspect(ctx, volume); err == nil {
			out = append(out, "volume "+volume)
		}
	}
	ns, err := eng.NetworkList(ctx, "", filter)
	require.NoError(t, err)
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	sort.Strings(out)
	return out
}

// A zip that is not one is refused before anything is made: the volume it
// names must not appear (issue 13). datasets/food11 creates the volume
// before it reads the zip; the fix belongs there.
func TestDataFood11RejectedZipCreatesNoVolume(t *testing.T) {
	eng := dockertest.Engine(t)
	notZip := filepath.Join(t.TempDir(), "notzip.zip")
	require.NoError(t, os.WriteFile(notZip, []byte("this is not a zip file\n"), 0o644))
	vol := dockertest.UniqueName(t, "mltrain-test-notzip")
	t.Cleanup(func() { _ = eng.VolumeRemove(context.Background(), vol) })

	stdout, stderr, code := runBin(t, binRun{args: []string{"data", "food11", "--zip", notZip, "--volume", vol},
		env: []string{"MLTRAIN_STATE_DIR=" + t.TempDir(), "HOME=" + t.TempDir()}})
	assert.Equal(t, 1, code, stderr)
	assert.Empty(t, stdout)
	e, next := nextLines(stderr)
	assert.Contains(t, e, notZip, "the error names the file")
	assert.Contains(t, e, "zip")
	assert.NotEmpty(t, next)
	_, err := eng.VolumeInspect(context.Background(), vol)
	assert.True(t, docker.IsNotFound(err), "a rejected zip leaves no volume %s: %v", vol, err)
}
