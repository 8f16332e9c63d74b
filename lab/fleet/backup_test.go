package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/fleet/fleettest"
	"github.com/mltrain/mltrain/lab/verify"
)

func TestHostDirIsALabelOrAnAddress(t *testing.T) {
	for h, want := range map[Host]string{
		{Address: "10.0.0.1", Label: "ada"}:                "ada",
		{Address: "10.0.0.1", Label: "linus torvalds"}:     "linus-torvalds",
		{Address: "10.0.0.1", Label: "a/../b"}:             "a-..-b",
		{Address: "10.0.0.1", Label: ".."}:                 "--",
		{Address: "10.0.0.1"}:                              "10.0.0.1",
		{Address: "fe80::1", Label: "grâce"}:               "gr-ce",
		{Address: "node-7.example.org", Label: "#7 (tue)"}: "-7--tue-",
	} {
		assert.Equal(t, want, HostDir(h), "%+v", h)
	}
	dest, err := backup.ParseTarget("s3://course/sec1")
	require.NoError(t, err)
	ts, err := BackupTargets([]Host{{Address: "10.0.0.1", Label: "ada"}, {Address: "10.0.0.2"}}, dest)
	require.NoError(t, err)
	assert.Equal(t, "s3://course/sec1/ada/", ts[0].String())
	assert.Equal(t, "s3://course/sec1/10.0.0.2/", ts[1].String())

	_, err = BackupTargets([]Host{{Address: "10.0.0.1", Label: "ada l", Line: 1}, {Address: "10.0.0.2", Label: "ada/l", Line: 3}}, dest)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hosts lines 1 (ada l) and 3 (ada/l) would both back up to s3://course/sec1/ada-l/")
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err), "the hosts file's mistake: a usage error")
}

// Over real OpenSSH servers: the instructor's S3 keys reach each host on
// its session's stdin, never in the command line the SSH layer sends (nor
// the host's environment), and each host ends in its state.
func TestFleetBackupSendsTheKeysOnStdin(t *testing.T) {
	fleettest.Need(t)
	const secret, token = "SECRETkey0123456789abcdefghij", "TOKEN0123456789session"
	for _, k := range append(backup.S3EnvKeys, "AWS_PROFILE", "AWS_DEFAULT_REGION") {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://10.1.2.3:9000")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAINSTRUCTOR")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", token)
	t.Setenv("AWS_REGION", "us-east-1")

	dir := t.TempDir()
	key := fleettest.NewKey(t)
	identity := key.WritePrivate(t, dir, "id_ed25519")
	pub := key.Signer.PublicKey()
	seen := t.TempDir()
	// The stand-in mltrain keeps what it was given and answers as
	// 'backup --json' does.
	record := `for a; do last=$a; done
cat > ` + seen + `/stdin.$$; printf '%s\n' "$@" > ` + seen + `/args.$$; env > ` + seen + `/env.$$
`
	passed := fleettest.Start(t, pub)
	passed.Script(t, "mltrain", record+`echo "{\"target\":\"$last\",\"files\":3,\"bytes\":2048,\"uploaded\":2,\"uploaded_bytes\":1024}"`)
	failed := fleettest.Start(t, pub)
	failed.Script(t, "mltrain", record+printing(t, verify.Failure{Error: "listing bucket ray of the lab's MinIO 127.0.0.1:9000: connection refused",
		Next: "run 'mltrain status'"}, 1))
	noLab := fleettest.Start(t, pub)
	noLab.Script(t, "mltrain", record+printing(t, verify.Failure{Error: "no lab state at /root/.mltrain/mltrain/state.json", Reason: verify.ReasonNoLab}, 1))
	old := fleettest.Start(t, pub)
	old.Script(t, "mltrain", `echo 'Error: unknown flag: --s3-env-stdin' >&2; exit 2`)
	closed := fleettest.ClosedPort(t)
	known := filepath.Join(dir, "known_hosts")
	require.NoError(t, os.WriteFile(known, []byte(strings.Join([]string{passed.KnownHostsLine(), failed.KnownHostsLine(),
		noLab.KnownHostsLine(), old.KnownHostsLine()}, "\n")+"\n"), 0o600))
	hosts, err := ParseHosts(strings.NewReader(fmt.Sprintf("%s ada lovelace\n%s grace\n%s linus\n%s ken\n127.0.0.1:%d dennis\n",
		passed.Addr(t), failed.Addr(t), noLab.Addr(t), old.Addr(t), closed)), "hosts")
	require.NoError(t, err)

	var mu sync.Mutex
	sent := map[string]string{}
	o := Options{Identity: identity, KnownHosts: known, Timeout: 30 * time.Second, Home: dir, User: fleettest.User(t),
		StateDir: "/srv/lab state", sent: func(h Host, cmd string) {
			mu.Lock()
			defer mu.Unlock()
			sent[h.Name()] = cmd
		}}
	dest, err := backup.ParseTarget("s3://course/2026-11-29/")
	require.NoError(t, err)
	rep, err := Backup(context.Background(), hosts, dest, o)
	require.NoError(t, err)

	want := map[string]string{"ada lovelace": Passed, "grace": Failed, "linus": NoLab, "ken": NoMltrain, "dennis": Unreachable}
	for _, h := range rep.Hosts {
		assert.Equal(t, want[h.Name()], h.State, "%s: %s", h.Name(), h.Detail)
		if h.State != Passed {
			assert.NotEmpty(t, h.Fix, h.Name())
			assert.Nil(t, h.Backup)
		}
	}
	assert.False(t, rep.OK)
	ada := rep.Hosts[0]
	assert.Equal(t, "s3://course/2026-11-29/ada-lovelace/", ada.Target)
	require.NotNil(t, ada.Backup)
	assert.Equal(t, 3, ada.Backup.Files)
	assert.Equal(t, "3 files (2.0 KiB) in s3://course/2026-11-29/ada-lovelace/; sent 2 changed (1.0 KiB)", ada.Detail)
	assert.Contains(t, rep.Hosts[1].Detail, "backup could not run: listing bucket ray")
	assert.Equal(t, "run 'mltrain status'", rep.Hosts[1].Fix)
	assert.Contains(t, rep.Hosts[3].Detail, "unknown flag: --s3-env-stdin")
	assert.Contains(t, rep.Hosts[3].Fix, "backup --s3-env-stdin")
	assert.Equal(t, "s3://course/2026-11-29/dennis/", rep.Hosts[4].Target)

	// The command lines as the SSH layer sent them: the words, no secret.
	require.Len(t, sent, 4, "the four hosts that answered SSH")
	assert.Equal(t, "mltrain backup --json --s3-env-stdin --state-dir '/srv/lab state' s3://course/2026-11-29/ada-lovelace/", sent["ada lovelace"])
	for name, cmd := range sent {
		for _, s := range []string{secret, token, "AKIAINSTRUCTOR", "10.1.2.3"} {
			assert.NotContains(t, cmd, s, "%s's command line", name)
		}
	}
	// What the hosts got: the settings on stdin, and nowhere else.
	files, err := filepath.Glob(filepath.Join(seen, "*"))
	require.NoError(t, err)
	require.Len(t, files, 9, "stdin, args and env of the three hosts that ran the stand-in")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		switch kind, _, _ := strings.Cut(filepath.Base(f), "."); kind {
		case "stdin":
			assert.Equal(t, "AWS_ENDPOINT_URL=http://10.1.2.3:9000\nAWS_ACCESS_KEY_ID=AKIAINSTRUCTOR\nAWS_SECRET_ACCESS_KEY="+secret+
				"\nAWS_SESSION_TOKEN="+token+"\nAWS_REGION=us-east-1\n", string(b))
		default:
			assert.NotContains(t, string(b), secret, f)
			assert.NotContains(t, string(b), token, f)
		}
	}

	var tb strings.Builder
	require.NoError(t, WriteBackupTable(&tb, rep, false))
	out := tb.String()
	assert.Regexp(t, `(?m)^HOST\s+STATE\s+FILES\s+SIZE\s+SENT\s+TO$`, out)
	assert.Regexp(t, `(?m)^ada lovelace\s+passed\s+3\s+2\.0 KiB\s+1\.0 KiB\s+s3://course/2026-11-29/ada-lovelace/$`, out)
	assert.Regexp(t, `(?m)^dennis\s+unreachable\s+-\s+-\s+-\s+s3://course/2026-11-29/dennis/$`, out)
	assert.Contains(t, out, "5 hosts in")
	assert.Contains(t, out, "1 passed, 1 failed, 1 unreachable, 1 no-mltrain, 1 no-lab: NOT every host is backed up")

	// fleet verify's page, in backup's words: each host's state and what
	// its backup wrote or why it did not.
	var page strings.Builder
	require.NoError(t, rep.WriteHTML(&page))
	assert.Contains(t, page.String(), "<title>mltrain fleet backup to s3://course/2026-11-29/</title>")
	assert.Contains(t, page.String(), "Not every node is backed up")
	assert.Contains(t, page.String(), "3 files (2.0 KiB) in s3://course/2026-11-29/ada-lovelace/")
	assert.Contains(t, page.String(), "unknown flag: --s3-env-stdin")
	assert.NotContains(t, page.String(), secret)

	// As the instructor opens it: in Chromium, at a laptop's width.
	file := filepath.Join(t.TempDir(), "fleet-backup.html")
	require.NoError(t, os.WriteFile(file, []byte(page.String()), 0o644))
	p := fleettest.OpenWith(t, file, "fleet-backup-1000px", fleettest.Options{Width: 1000, Eval: map[string]string{
		"scroll": `document.documentElement.scrollWidth`,
	}})
	assert.Empty(t, p.Problems)
	assert.LessOrEqual(t, p.Values["scroll"], 1000.0, "the page does not scroll sideways at 1000 px")
	assert.Contains(t, p.Text, "Not every node is backed up")
	assert.Contains(t, p.Text, "3 files (2.0 KiB) in s3://course/2026-11-29/ada-lovelace/")
}
