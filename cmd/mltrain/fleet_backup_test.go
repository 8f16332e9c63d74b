package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/fleet"
	"github.com/mltrain/mltrain/lab/fleet/fleettest"
	"github.com/mltrain/mltrain/lab/labtest"
)

// The real mltrain, over real OpenSSH servers on loopback, running the real
// mltrain on each "host" against a lab whose MinIO is a real MinIO process,
// backing up to another real MinIO standing for the course's S3: the host
// with a lab lands under its own folder with a manifest.json (and the lab's
// last verify report), the host without one is no-lab, the closed port
// unreachable; the keys never reach a host's command line.
func TestFleetBackupOverSSHToS3(t *testing.T) {
	fleettest.Need(t)
	lab := backupLab(t, 16)
	require.NoError(t, os.MkdirAll(filepath.Join(lab, "reports"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(lab, "reports", "verify.json"), []byte(`{"project": "mltrain", "ok": true}`+"\n"), 0o600))
	s3 := labtest.StartMinIO(t)
	bin := mltrainBinary(t)
	dir := t.TempDir()
	key := fleettest.NewKey(t)
	identity := key.WritePrivate(t, dir, "id_ed25519")
	pub := key.Signer.PublicKey()

	// Each host's mltrain is this build. The host's own AWS settings are
	// wrong: the backup must use the instructor's, from stdin.
	argv := filepath.Join(dir, "argv")
	run := `echo "$*" >> ` + argv + `; AWS_ACCESS_KEY_ID=wrong AWS_SECRET_ACCESS_KEY=wrongwrong AWS_ENDPOINT_URL=http://127.0.0.1:1 exec ` + bin + ` "$@"`
	ada := fleettest.Start(t, pub)
	ada.Script(t, "mltrain", run)
	linus := fleettest.Start(t, pub)
	linus.Script(t, "mltrain", run+" --state-dir "+t.TempDir())
	closed := fleettest.ClosedPort(t)
	known := filepath.Join(dir, "known_hosts")
	require.NoError(t, os.WriteFile(known, []byte(ada.KnownHostsLine()+"\n"+linus.KnownHostsLine()+"\n"), 0o600))
	hosts := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte(fmt.Sprintf("%s ada\n%s linus\n127.0.0.1:%d dennis\n", ada.Addr(t), linus.Addr(t), closed)), 0o600))

	fleetBackup := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"fleet", "backup", hosts, "s3://course/sec1", "--identity", identity, "--known-hosts", known,
			"--state-dir", lab, "--timeout", "2m"}, args...)...)
		cmd.Env = append(os.Environ(), "USER="+fleettest.User(t), "SSH_AUTH_SOCK=", "AWS_ENDPOINT_URL="+s3.URL, "AWS_ENDPOINT_URL_S3=",
			"AWS_ACCESS_KEY_ID="+s3.RootUser, "AWS_SECRET_ACCESS_KEY="+s3.RootPassword, "AWS_REGION=us-east-1", "AWS_PROFILE=", "AWS_SESSION_TOKEN=")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run mltrain: %v", err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}

	out, errOut, code := fleetBackup("--json")
	assert.Equal(t, 1, code, "not every host is backed up\n%s%s", out, errOut)
	var rep fleet.BackupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Hosts, 3)
	want := map[string]string{"ada": fleet.Passed, "linus": fleet.NoLab, "dennis": fleet.Unreachable}
	for _, h := range rep.Hosts {
		assert.Equal(t, want[h.Label], h.State, "%s: %s", h.Label, h.Detail)
	}
	require.NotNil(t, rep.Hosts[0].Backup, rep.Hosts[0].Detail)
	assert.Equal(t, "s3://course/sec1/ada/", rep.Hosts[0].Target)
	assert.Equal(t, 4, rep.Hosts[0].Backup.Files, "the checkpoint, train.py, the verify report, the plan")
	assert.Contains(t, rep.Hosts[2].Detail, "refused the connection")

	// The backup is in the course's S3, under ada's folder.
	mc, err := minio.New(strings.TrimPrefix(s3.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4(s3.RootUser, s3.RootPassword, "")})
	require.NoError(t, err)
	var keys []string
	for o := range mc.ListObjects(context.Background(), "course", minio.ListObjectsOptions{Recursive: true}) {
		require.NoError(t, o.Err)
		keys = append(keys, o.Key)
	}
	assert.ElementsMatch(t, []string{"sec1/ada/manifest.json", "sec1/ada/bucket/ray/run/checkpoint_000000/model.pt",
		"sec1/ada/workspace/train.py", "sec1/ada/reports/verify.json", "sec1/ada/plan/state.json"}, keys)
	obj, err := mc.GetObject(context.Background(), "course", "sec1/ada/manifest.json", minio.GetObjectOptions{})
	require.NoError(t, err)
	b, err := io.ReadAll(obj)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"path": "reports/verify.json"`)

	// What each host's shell was asked to run: the words, no key.
	b, err = os.ReadFile(argv)
	require.NoError(t, err)
	assert.Contains(t, string(b), "backup --json --s3-env-stdin --state-dir "+lab+" s3://course/sec1/ada/")
	assert.NotContains(t, string(b), s3.RootPassword)
	assert.NotContains(t, string(b), s3.RootUser)

	// Again, as a table: nothing changed, nothing is sent.
	out, _, code = fleetBackup()
	assert.Equal(t, 1, code)
	assert.Regexp(t, `(?m)^ada\s+passed\s+4\s+16 MiB\s+0 B\s+s3://course/sec1/ada/$`, out)
	assert.Regexp(t, `(?m)^linus\s+no-lab\s+-`, out)
	assert.Contains(t, out, "3 hosts in")
	assert.Contains(t, out, "NOT every host is backed up")
	assert.NotContains(t, out, s3.RootPassword)
}

func TestFleetBackupUsageErrors(t *testing.T) {
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte("cc@10.0.0.1 ada l\ncc@10.0.0.2 ada/l\n"), 0o600))
	_, errOut, code := runOffline(t, "fleet", "backup", hosts, "course.tar.gz")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `"course.tar.gz" is a file: each host backs up to its own folder of an s3://bucket/prefix`)
	assert.Contains(t, errOut, "Next: run 'mltrain fleet backup --help'")
	_, errOut, code = runOffline(t, "fleet", "backup", hosts, "s3://course/sec1")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "hosts lines 1 (ada l) and 2 (ada/l) would both back up to s3://course/sec1/ada-l/")
	_, errOut, code = runOffline(t, "fleet", "backup", hosts)
	assert.Equal(t, 2, code, errOut)

	// The hosts' side: only the AWS keys are read from stdin.
	_, errOut, code = runOfflineIn(t, "AWS_ACCESS_KEY_ID=a\nAWS_SECRET_ACCESS_KEY=b\nLD_PRELOAD=/tmp/x.so\n", "backup", "--s3-env-stdin", "s3://b/p", "--state-dir", dir)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, `stdin line 3 sets "LD_PRELOAD": only AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID`)
	assert.NotContains(t, errOut, "/tmp/x.so")
}
