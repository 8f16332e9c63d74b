package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/fleet"
	"github.com/mltrain/mltrain/lab/fleet/fleettest"
	"github.com/mltrain/mltrain/lab/verify"
)

// The real mltrain, over real OpenSSH servers on loopback, against the real
// mltrain on each "host" and a stand-in lab on the real engine: every host
// ends in its state, the exit status is 1, the JSON, JUnit and HTML name
// every host, and the HTML loads in headless Chromium with no console error.
func TestFleetVerifyOverSSH(t *testing.T) {
	fleettest.Need(t)
	s := newStandin(t)
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, stderr)
	live := "host,containers,gpu,ray,minio,metrics,jupyter" // the stand-in lab has no dataset and ran no exercise
	// Health checks and Prometheus's first scrape of the workers come
	// seconds after 'up' (issue 21): wait for the lab's own verify to pass.
	require.Eventually(t, func() bool {
		_, _, code := runBin(t, binRun{args: append([]string{"verify", "--only", live}, s.lab()...), env: s.env})
		return code == 0
	}, 90*time.Second, 2*time.Second, "the stand-in lab never verified")

	bin := mltrainBinary(t)
	dir := t.TempDir()
	key := fleettest.NewKey(t)
	identity := key.WritePrivate(t, dir, "id_ed25519")
	pub := key.Signer.PublicKey()

	// Each host's mltrain is this build, in the stand-in lab's environment
	// (a CPU rehearsal host); fleet passes it the lab's --project and
	// --state-dir. One host verifies the live groups, one the exercises
	// (none ran: failed), one is pointed at an empty state dir (no lab).
	env := "exec env " + strings.Join(s.env, " ") + " " + bin + ` "$@" `
	passed := fleettest.Start(t, pub)
	passed.Script(t, "mltrain", env+"--only "+live)
	failed := fleettest.Start(t, pub)
	failed.Script(t, "mltrain", env+"--only host,exercises")
	noLab := fleettest.Start(t, pub)
	noLab.Script(t, "mltrain", env+"--state-dir "+t.TempDir())
	missing := fleettest.Start(t, pub)
	refused := fleettest.Start(t, fleettest.NewKey(t).Signer.PublicKey())
	changed := fleettest.Start(t, pub)
	closed := fleettest.ClosedPort(t)

	known := filepath.Join(dir, "known_hosts")
	lines := []string{passed.KnownHostsLine(), failed.KnownHostsLine(), noLab.KnownHostsLine(), missing.KnownHostsLine(),
		refused.KnownHostsLine(), fleettest.Host{Port: changed.Port, HostKey: fleettest.NewKey(t)}.KnownHostsLine()}
	require.NoError(t, os.WriteFile(known, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	hostsFile := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hostsFile, []byte(strings.Join([]string{
		"# section 1, Tuesday",
		passed.Addr(t) + " ada",
		failed.Addr(t) + " grace",
		noLab.Addr(t) + " linus",
		missing.Addr(t) + " margaret",
		refused.Addr(t) + " ken",
		changed.Addr(t) + " barbara",
		fmt.Sprintf("127.0.0.1:%d dennis", closed),
	}, "\n")+"\n"), 0o600))
	want := map[string]string{"ada": fleet.Passed, "grace": fleet.Failed, "linus": fleet.NoLab, "margaret": fleet.NoMltrain,
		"ken": fleet.AuthRefused, "barbara": fleet.HostKey, "dennis": fleet.Unreachable}

	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append(append([]string{"fleet", "verify", hostsFile, "--identity", identity, "--known-hosts", known,
			"--timeout", "60s"}, s.lab()...), args...)...)
		cmd.Env = append(os.Environ(), "USER="+fleettest.User(t), "SSH_AUTH_SOCK=")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run mltrain: %v", err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}

	// The table, with a line per finished host on stderr (piped).
	out, progress, code := run()
	assert.Equal(t, 1, code, "not every host passed\n%s%s", out, progress)
	for name, state := range want {
		assert.Regexp(t, `(?m)^`+name+`\s+`+state+`\b`, out)
		assert.Equal(t, 1, strings.Count(progress, " "+name+": "), "one progress line for %s:\n%s", name, progress)
	}
	assert.NotContains(t, progress, "•", "piped, a host's start is not a line")
	assert.Regexp(t, `(?m)^✓ ada: passed \(\d\d checks\)$`, progress)
	assert.Regexp(t, `(?m)^✗ barbara: host-key: host key CHANGED`, progress)
	assert.Contains(t, out, "7 hosts in")

	// JSON, JUnit and HTML from one run.
	junit, page := filepath.Join(dir, "fleet.xml"), filepath.Join(dir, "fleet.html")
	out, _, code = run("--json", "--junit", junit, "--html", page)
	assert.Equal(t, 1, code)
	var rep fleet.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Hosts, 7)
	assert.False(t, rep.OK)
	for _, n := range rep.Hosts {
		assert.Equal(t, want[n.Label], n.State, "%s: %s", n.Label, n.Detail)
	}
	assert.Equal(t, "ada", rep.Hosts[0].Label)
	require.NotNil(t, rep.Hosts[0].Report)
	assert.Equal(t, s.project, rep.Hosts[0].Report.Project, "the lab's --project reached the host")
	assert.Equal(t, 7, len(verify.NodeGroups(rep.Hosts[:1])), "every live group ran: %v", verify.NodeGroups(rep.Hosts[:1]))
	assert.Contains(t, rep.Hosts[1].Detail, "failed: exercises.submit, exercises.infeasible")
	assert.Contains(t, rep.Hosts[2].Detail, "no lab state at")

	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	var suites struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b, &suites))
	require.Len(t, suites.Suites, 7, "one testsuite per host")
	for _, s := range suites.Suites {
		assert.Equal(t, want[s.Name] == fleet.Passed, s.Failures == 0, "%s: %d failures", s.Name, s.Failures)
	}

	p := fleettest.Open(t, page, "fleet-verify")
	assert.Empty(t, p.Problems, "the page loads with no console error")
	assert.Zero(t, p.Fetches, "the page fetches nothing")
	for name, state := range want {
		assert.Contains(t, p.Text, name)
		assert.Contains(t, p.Text, state)
	}
	assert.Contains(t, p.Text, "host key CHANGED")
	// Printed, every check's evidence shows, the passed ones' too (closed
	// on screen).
	passedEvidence := rep.Hosts[0].Report.Checks[0].Evidence
	assert.NotContains(t, p.Text, passedEvidence)
	assert.Contains(t, p.PrintText, passedEvidence)
}

func TestFleetVerifyBadHostsFileIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runOffline(t, "fleet", "verify", filepath.Join(dir, "none"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "Error: hosts file: open ")
	assert.Contains(t, errOut, "Next: write one host per line: [user@]address[:port] [label]")

	bad := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(bad, []byte("cc@10.0.0.1:port\n"), 0o600))
	_, errOut, code = runOffline(t, "fleet", "verify", bad)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "hosts line 1: \"cc@10.0.0.1:port\": port \"port\" is not a number")

	_, errOut, code = runOffline(t, "fleet", "verify")
	assert.Equal(t, 2, code, errOut)

	_, errOut, code = runOffline(t, "fleet", "verify", bad, "--parallel", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--parallel (0) and --timeout (3m0s) must be positive")

	_, errOut, code = runOffline(t, "fleet", "verify", bad, "--only", "ray,bogus")
	assert.Equal(t, 2, code, "the hosts' --only is checked here, before any host is asked")
	assert.Contains(t, errOut, `--only "bogus" is not a check group`)
}

// On a terminal each running host is a row the live view redraws, and a
// line stays for each host that finished.
func TestFleetVerifyOnATerminal(t *testing.T) {
	fleettest.Need(t)
	dir := t.TempDir()
	key := fleettest.NewKey(t)
	identity := key.WritePrivate(t, dir, "id_ed25519")
	report := `{"project":"mltrain","ok":true,"passed":1,"checks":[{"id":"host.gpus","group":"host","title":"GPUs","status":"pass","evidence":"no GPU hardware"}]}`
	fast := fleettest.Start(t, key.Signer.PublicKey())
	fast.Script(t, "mltrain", "echo '"+report+"'")
	slow := fleettest.Start(t, key.Signer.PublicKey())
	slow.Script(t, "mltrain", "sleep 3; echo '"+report+"'")
	known := filepath.Join(dir, "known_hosts")
	require.NoError(t, os.WriteFile(known, []byte(fast.KnownHostsLine()+"\n"+slow.KnownHostsLine()+"\n"), 0o600))
	hosts := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte(fast.Addr(t)+" fast\n"+slow.Addr(t)+" slow\n"), 0o600))

	run := runTerm(t, TermOptions{Args: []string{"fleet", "verify", hosts, "--identity", identity, "--known-hosts", known},
		Env: []string{"USER=" + fleettest.User(t), "SSH_AUTH_SOCK="}, Limit: time.Minute})
	assert.Equal(t, 0, run.Code, run.Output)
	assert.GreaterOrEqual(t, run.Redraws, 1, "the live view redrew while the slow host ran")
	screen := strings.Join(run.Screen, "\n")
	assert.Regexp(t, `(?m)^✓ fast: passed \(1 checks\)`, screen)
	assert.Regexp(t, `(?m)^✓ slow: passed \(1 checks\)`, screen)
	assert.Regexp(t, "(?m)^slow  \x1b\\[32mpassed\x1b\\[0m  \x1b\\[32mok\x1b\\[0m$", screen, "coloured on a terminal")
	assert.Contains(t, screen, "2 hosts in")
	assert.Contains(t, run.Output, "running mltrain verify", "the row says what the host is doing")
}
