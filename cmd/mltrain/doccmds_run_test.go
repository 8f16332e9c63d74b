package main

// The pages' and the guide's commands run on one stand-in lab on the real
// engine, with its real addresses, ports and token: the mltrain lines a
// student runs on a lab that is up, the Python one-liners through the
// dashboard's REST API (as Jupyter's terminal runs them, RAY_ADDRESS the
// dashboard's URL), and the docker lines' containers and files resolved.

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// curlProbe is a page's curl of the lab, as a student would type it.
const curlProbe = "```sh\ncurl -fsS -H \"Authorization: Bearer $RAY_AUTH_TOKEN\" http://<host>:8265/api/version\n```\n"

// runnable are the mltrain commands run here, on a lab that is up, with
// the exit codes they may end with (verify: 1 when a check fails, as the
// exercises' checks do before any exercise ran).
var runnable = map[string][]int{
	"mltrain status": {0}, "mltrain credentials": {0}, "mltrain lab guide": {0}, "mltrain logs": {0},
	"mltrain verify": {0, 1}, "mltrain worker": {0}, "mltrain version": {0}, "mltrain gpus": {0}, "mltrain completion": {0},
}

// runElsewhere are the mltrain commands the pages show that another
// real-engine test of this package runs, each named (and checked to exist).
var runElsewhere = map[string]string{
	"mltrain up": "TestStudentLabOnTheEngine", "mltrain data": "TestStudentLabOnTheEngine",
	"mltrain lab": "TestStudentLabOnTheEngine", "mltrain down": "TestStudentLabOnTheEngine",
	"mltrain doctor": "TestDoctorJSONRealEngineNVIDIAFixture", "mltrain join-token": "TestStudentLabOverTwoHosts",
	"mltrain join": "TestStudentLabOverTwoHosts", "mltrain fleet": "TestFleetVerifyOverSSH",
	"mltrain images": "TestImagesSaveThenLoadThroughTheCLI", "mltrain build": "TestBuildPullNeverNamesTheMissingBases",
	"mltrain render": "TestRenderForAnotherHost",
	"mltrain backup": "TestBackupSurvivesDownVolumesAndAFreshUp", "mltrain restore": "TestBackupSurvivesDownVolumesAndAFreshUp",
	"mltrain lease": "TestTheLeaseSurvivesReUpsOnTheStandinLab",
}

// testDefined: a test function of this package is named name.
func testDefined(t *testing.T, name string) bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(b), "\nfunc "+name+"(t *testing.T)") {
			return true
		}
	}
	return false
}

// commandPath is "mltrain" and the words before the first argument or
// flag that name a command ("mltrain lab guide" keeps guide: it is lab's
// own mode, run here).
func commandPath(words []string) string {
	if len(words) > 2 && words[1] == "lab" && words[2] == "guide" {
		return "mltrain lab guide"
	}
	if len(words) > 1 {
		return "mltrain " + words[1]
	}
	return "mltrain"
}

func TestDocCommandsOnAStandinLab(t *testing.T) {
	py, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 runs the pages' one-liners (.ci/run installs it)")
	s := newStandin(t)
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)
	clients, err := state.Dir(s.stateDir).Connect()
	require.NoError(t, err)
	rayEnv := []string{"RAY_ADDRESS=" + clients.Ray.Address() + "/", "RAY_AUTH_TOKEN=" + clients.Creds.RayAuthToken}

	pages, err := readPages()
	require.NoError(t, err)
	cmds := append(pages, collectText("mltrain lab guide", exercise.Guide(nextstep.Commands{}, ""))...)
	// The pages have no curl of the lab yet: one line proves the way a
	// new one would run (the course's port mapped to the stand-in's).
	cmds = append(cmds, collectMarkdown("synthetic.md", curlProbe)...)

	// The infeasible job the by-hand lines look at and end, submitted
	// under the id the placeholder table gives <submission id>.
	id := fillPlaceholders("<submission id>")
	_, err = clients.Ray.Submit(context.Background(), ray.SubmitRequest{SubmissionID: id,
		Entrypoint: "python train.py --mode plain", EntrypointNumGPUs: 2, EntrypointNumCPUs: 1})
	require.NoError(t, err)

	ran := map[string]bool{}
	work := t.TempDir()
	for _, c := range cmds {
		line := strings.Join(c.words, " ")
		// A mention runs when it is a whole command line (`mltrain status`);
		// a docker mention's names resolve. A follow (-f) never ends.
		whole := c.words[0] == "docker" || (c.words[0] == "mltrain" && checkMltrain(c.words, false) == nil)
		if ran[line] || (c.mention && !whole) || slices.Contains(c.words, "-f") && c.words[0] == "mltrain" {
			continue
		}
		switch c.words[0] {
		case "mltrain":
			path := commandPath(c.words)
			want, ok := runnable[path]
			if !ok {
				assert.True(t, runElsewhere[path] != "" && testDefined(t, runElsewhere[path]),
					"%s: %s is neither run here nor by a test runElsewhere names", c.where, line)
				continue
			}
			ran[line] = true
			args := append(slices.Clone(s.lab()), c.words[1:]...)
			cmd := exec.Command(mltrainBinary(t), args...)
			cmd.Dir, cmd.Env = work, append(os.Environ(), s.env...)
			stdout, stderr, code := runToExit(t, cmd, 2*time.Minute, args)
			assert.Contains(t, want, code, "%s: %s\n%s\n%s", c.where, line, stdout, stderr)
			assert.NotEmpty(t, stdout, "%s: %s prints", c.where, line)
		case "python", "python3":
			if len(c.words) < 3 || c.words[1] != "-c" {
				continue // train.py: the entrypoint of a ray line (checked against its argparse)
			}
			ran[line] = true
			cmd := exec.Command(py, c.words[1:]...)
			cmd.Env = append(os.Environ(), rayEnv...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s: %s\n%s", c.where, line, out)
			if strings.Contains(line, "cluster_status") {
				assert.Contains(t, string(out), "'GPU': 2.0", "%s: the cluster status lists the infeasible job's demand", c.where)
			}
		case "docker":
			ran[line] = true
			checkDockerOnStandin(t, s, c)
		case "curl":
			ran[line] = true
			curlOnStandin(t, s, c, rayEnv)
		}
	}
	for _, want := range []string{"mltrain status", "mltrain worker stop 1", "mltrain worker start 1", "mltrain lab guide"} {
		assert.True(t, ran[want], "ran %s", want)
	}
	var oneLiners int
	for l := range ran {
		if strings.HasPrefix(l, "python -c") {
			oneLiners++
		}
	}
	assert.GreaterOrEqual(t, oneLiners, 2, "ran the cluster status and the supervisor kill")
	assert.True(t, ran[strings.Join(collectMarkdown("", curlProbe)[0].words, " ")], "ran the curl of the lab")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last, err := clients.Ray.Wait(ctx, id, ray.WaitOptions{Poll: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, ray.Failed, last.Status, "the pages' kill of its supervisor ended the infeasible job")
}

// checkDockerOnStandin resolves a docker line on the stand-in lab: the
// container it names exists (the default lab's name is the stand-in's
// <project>-<service>), the compose file it names is the lab's.
func checkDockerOnStandin(t *testing.T, s *standin, c docCmd) {
	t.Helper()
	if name := dockerContainer(c.words); name != "" {
		svc := strings.TrimPrefix(name, service.DefaultProject+"-")
		assert.Contains(t, s.containers(t), service.ContainerName(s.project, svc), "%s: %s names a container of the lab", c.where, strings.Join(c.words, " "))
	}
	if i := slices.Index(c.words, "-f"); i > 0 && i+1 < len(c.words) {
		f := strings.Replace(c.words[i+1], "~/.mltrain/"+service.DefaultProject, s.stateDir, 1)
		_, err := os.Stat(f)
		assert.NoError(t, err, "%s: %s names the lab's file", c.where, filepath.Base(f))
	}
}

// curlOnStandin runs a curl of a lab address (checkCurl) with the stand-in's
// port in place of the course's, as the shell runs it (RAY_ADDRESS and
// RAY_AUTH_TOKEN set, as in Jupyter); a curl of this repository's files
// needs the network and is only checked.
func curlOnStandin(t *testing.T, s *standin, c docCmd, env []string) {
	t.Helper()
	line := fillPlaceholders(c.text)
	for _, w := range c.words[1:] {
		if installURL.MatchString(w) || releaseURL.MatchString(w) {
			return // checked by checkCurl; a release needs the network (a mirror: release's TestInstallFromDistServedAsIs)
		}
		name, ok := labPortName(w)
		if !ok {
			continue
		}
		u, err := url.Parse(w)
		require.NoError(t, err)
		line = strings.ReplaceAll(line, u.Host, net.JoinHostPort(u.Hostname(), strconv.Itoa(s.opts.Ports[name])))
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s: %s\n%s", c.where, line, out)
		return
	}
	t.Errorf("%s: %s: no URL of this repository or the lab", c.where, c.text)
}
