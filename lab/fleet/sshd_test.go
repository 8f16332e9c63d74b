package fleet

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/fleet/fleettest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/verify"
)

// printing is a stand-in mltrain that prints v as JSON and exits with code.
func printing(t *testing.T, v any, code int) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return fmt.Sprintf("cat <<'EOF'\n%s\nEOF\nexit %d", b, code)
}

func report(failed ...string) verify.Report {
	r := verify.Report{Project: "mltrain", Mode: plan.ModeCPU, OK: len(failed) == 0, Started: time.Now().UTC(), Seconds: 0.4,
		Checks: []verify.Check{{ID: "host.gpus", Group: "host", Title: "GPUs", Status: verify.Pass, Evidence: "no GPU hardware"}}}
	for _, id := range failed {
		g, _, _ := strings.Cut(id, ".")
		r.Checks = append(r.Checks, verify.Check{ID: id, Group: g, Status: verify.Fail, Evidence: "broken", Fix: "mltrain up"})
	}
	r.Passed, r.Failed = 1, len(failed)
	return r
}

// Every state a host can end in, each from a real OpenSSH server on
// loopback (or a port nothing listens on).
func TestEveryHostEndsInOneState(t *testing.T) {
	fleettest.Need(t)
	dir := t.TempDir()
	key, other := fleettest.NewKey(t), fleettest.NewKey(t)
	identity := key.WritePrivate(t, dir, "id_ed25519")
	pub := key.Signer.PublicKey()

	passed := fleettest.Start(t, pub)
	passed.Script(t, "mltrain", `[ "$#" = 9 ] && [ "$1 $2 $3 $4 $5" = "verify --json --project p1 --state-dir" ] && [ "$6" = "/tmp/a b" ] && [ "$7 $8 $9" = "--only ray,host --data-full" ] || { echo "args: $*" >&2; exit 3; }`+"\n"+printing(t, report(), 0))
	failed := fleettest.Start(t, pub)
	failed.Script(t, "mltrain", printing(t, report("ray.auth", "minio.bucket"), 1))
	noLab := fleettest.Start(t, pub)
	noLab.Script(t, "mltrain", printing(t, verify.Failure{Error: "no lab state at /root/.mltrain/mltrain/state.json",
		Next: "run 'mltrain up' first", Reason: verify.ReasonNoLab}, 1))
	broken := fleettest.Start(t, pub)
	broken.Script(t, "mltrain", printing(t, verify.Failure{Error: "connect to the Docker engine: permission denied", Next: "mltrain doctor"}, 1))
	missing := fleettest.Start(t, pub)
	old := fleettest.Start(t, pub)
	old.Script(t, "mltrain", `echo 'Error: unknown flag: --json' >&2; exit 2`)
	refused := fleettest.Start(t, other.Signer.PublicKey())
	changed := fleettest.Start(t, pub)
	unknown := fleettest.Start(t, pub)
	unknown.Script(t, "mltrain", printing(t, report(), 0))
	retyped := fleettest.Start(t, pub) // known by an RSA key, now offers ed25519 only
	slow := fleettest.Start(t, pub)
	slow.Script(t, "mltrain", "sleep 30")
	closed := fleettest.ClosedPort(t)

	known := filepath.Join(dir, "known_hosts")
	var lines []string
	for _, h := range []fleettest.Host{passed, failed, noLab, broken, missing, old, refused, slow} {
		lines = append(lines, h.KnownHostsLine())
	}
	lines = append(lines, fleettest.Host{Port: changed.Port, HostKey: other}.KnownHostsLine())
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaPub, err := ssh.NewPublicKey(&rsaKey.PublicKey)
	require.NoError(t, err)
	lines = append(lines, knownhosts.Line([]string{fmt.Sprintf("[127.0.0.1]:%d", retyped.Port)}, rsaPub))
	require.NoError(t, os.WriteFile(known, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	file := ""
	add := func(addr, label string) { file += addr + " " + label + "\n" }
	add(passed.Addr(t), "ada")
	add(failed.Addr(t), "grace")
	add(noLab.Addr(t), "")
	add(broken.Addr(t), "# a comment")
	add(missing.Addr(t), "linus torvalds")
	add(old.Addr(t), "old")
	add(refused.Addr(t), "refused")
	add(changed.Addr(t), "changed")
	add(unknown.Addr(t), "unknown")
	add(retyped.Addr(t), "retyped")
	add(slow.Addr(t), "slow")
	add(fmt.Sprintf("127.0.0.1:%d", closed), "closed")
	hosts, err := ParseHosts(strings.NewReader(file), "hosts")
	require.NoError(t, err)
	require.Len(t, hosts, 12)

	var rec progress.Recorder
	o := Options{Identity: identity, KnownHosts: known, Timeout: 15 * time.Second, Parallel: 4, Home: dir,
		User: fleettest.User(t), Project: "p1", StateDir: "/tmp/a b", Only: []string{"ray", "host"}, DataFull: true, Progress: &rec}
	ctx := context.Background()
	t0 := time.Now()
	rep, err := Run(ctx, hosts, o)
	require.NoError(t, err)
	assert.Less(t, time.Since(t0), 60*time.Second)

	state := map[string]verify.Node{}
	for _, n := range rep.Hosts {
		state[n.Name()] = n
	}
	want := map[string]string{
		"ada": Passed, "grace": Failed, noLab.Addr(t): NoLab, broken.Addr(t): Failed,
		"linus torvalds": NoMltrain, "old": NoMltrain, "refused": AuthRefused, "changed": HostKey,
		"unknown": HostKey, "retyped": HostKey, "slow": TimedOut, "closed": Unreachable,
	}
	for name, s := range want {
		n := state[name]
		assert.Equal(t, s, n.State, "%s: %s", name, n.Detail)
		if s != Passed {
			assert.NotEmpty(t, n.Fix, "%s says what to do", name)
		}
		kind := progress.Fail
		if s == Passed {
			kind = progress.Done
		}
		assert.True(t, rec.Has(name, progress.Start) && rec.Has(name, kind), "progress of %s", name)
	}
	assert.False(t, rep.OK)
	assert.Equal(t, 3, rep.States[HostKey])
	assert.Equal(t, 1, rep.States[Passed])

	assert.Equal(t, "failed: ray.auth, minio.bucket", state["grace"].Detail)
	assert.Contains(t, state[broken.Addr(t)].Detail, "verify could not run: connect to the Docker engine")
	assert.Equal(t, "mltrain doctor", state[broken.Addr(t)].Fix)
	assert.Contains(t, state["linus torvalds"].Detail, "mltrain is not on")
	assert.Contains(t, state["old"].Detail, "unknown flag: --json")
	assert.Contains(t, state["refused"].Detail, "refused every key offered")
	assert.Contains(t, state["changed"].Detail, "host key CHANGED: [127.0.0.1]:")
	assert.Contains(t, state["changed"].Detail, known+":9")
	assert.Contains(t, state["changed"].Fix, "ssh-keygen -R '[127.0.0.1]:")
	assert.Contains(t, state["unknown"].Detail, "host key unknown")
	assert.Contains(t, state["unknown"].Fix, "--accept-new")
	assert.Contains(t, state["retyped"].Detail, "offers none of the key types")
	assert.Contains(t, state["closed"].Detail, fmt.Sprintf("127.0.0.1:%d refused the connection: nothing listens on port %d there (is sshd running?)", closed, closed))
	assert.Contains(t, state["closed"].Fix, "sudo systemctl start ssh")
	assert.NotContains(t, state["closed"].Detail, "dial tcp", "a sentence, not Go's dial error")
	assert.Contains(t, state["slow"].Detail, "while 'mltrain verify' ran")
	require.NotNil(t, state["ada"].Report)
	assert.Equal(t, "host.gpus", state["ada"].Report.Checks[0].ID)

	// The table names every host once, with its state.
	var b strings.Builder
	require.NoError(t, WriteTable(&b, rep, false))
	for name, s := range want {
		assert.Regexp(t, `(?m)^`+regexpQuote(name)+`\s+`+s+`\b`, b.String())
	}
	assert.Contains(t, b.String(), "12 hosts in")
	assert.Contains(t, b.String(), "1 passed, 2 failed, 1 unreachable, 1 auth-refused, 3 host-key, 2 no-mltrain, 1 no-lab, 1 timed-out")

	// --accept-new records the unknown key and passes; a changed key is
	// still refused.
	o.AcceptNew = true
	rep, err = Run(ctx, []Host{hosts[7], hosts[8]}, o) // changed, unknown
	require.NoError(t, err)
	assert.Equal(t, HostKey, rep.Hosts[0].State)
	assert.Equal(t, Passed, rep.Hosts[1].State, rep.Hosts[1].Detail)
	b2, err := os.ReadFile(known)
	require.NoError(t, err)
	assert.Contains(t, string(b2), unknown.KnownHostsLine())
	assert.Equal(t, 1, strings.Count(string(b2), fmt.Sprintf("[127.0.0.1]:%d ", changed.Port)), "the changed key is left as it was")
	o.AcceptNew = false
	rep, err = Run(ctx, []Host{hosts[8]}, o)
	require.NoError(t, err)
	assert.Equal(t, Passed, rep.Hosts[0].State, "the recorded key is known now")
	assert.True(t, rep.OK)
}

func regexpQuote(s string) string {
	return strings.NewReplacer(".", `\.`, "[", `\[`, "]", `\]`, ":", ":").Replace(s)
}
