package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
)

// testBundle is a second host's bundle with secrets made up per test.
func testBundle(t *testing.T) plan.JoinBundle {
	t.Helper()
	secret := strings.ReplaceAll(strings.ToLower(t.Name()), "/", "")
	return plan.JoinBundle{Lab: "mltrain", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265,
		RayToken: "tok" + strings.Repeat("ab", 30), MinIO: "http://10.52.0.7:9000", Bucket: "ray",
		S3Access: "LABUSER" + strings.ToUpper(secret[len(secret)-6:]), S3Secret: "labsecret-" + secret,
		RayVersion: plan.DefaultRayVersion, Python: "3.12", ImageHash: "000000000000", ImageKind: "ray-rocm", PortBase: plan.DefaultRayPortBase}
}

// secretFile writes text into a fresh file of mode perm.
func secretFile(t *testing.T, text string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.WriteFile(p, []byte(text), perm))
	require.NoError(t, os.Chmod(p, perm))
	return p
}

// renderOnly are the flags that make join plan this host from a file and
// write compose.yaml into a fresh directory, touching nothing else.
func renderOnly(t *testing.T) (flags []string, out string) {
	out = t.TempDir()
	return []string{"--render-only", "--out", out, "--gpus-from", gpusFile(t, twoNvidia), "--cpus", "16", "--memory", "64g", "--node-ip", "10.52.0.8"}, out
}

// Every way of giving the bundle off the command line works, with no
// warning; on the command line it works too, with a warning that says why
// and names the safer forms.
func TestJoinTakesTheBundleOffTheCommandLine(t *testing.T) {
	b := testBundle(t)
	line := joinLine(b)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		env   string
		warn  bool
	}{
		{name: "stdin with -", args: []string{"-"}, stdin: b.Encode() + "\n"},
		{name: "stdin not a terminal", stdin: "\n" + b.Encode() + "\n"},
		{name: "stdin holding join-token's line", args: []string{"-"}, stdin: line + "\n"},
		{name: "bundle file", args: []string{"--bundle-file", secretFile(t, b.Encode()+"\n", 0o600)}},
		{name: "bundle file holding join-token's line", args: []string{"--bundle-file", secretFile(t, line, 0o400)}},
		{name: "environment", env: b.Encode()},
		{name: "argument", args: []string{b.Encode()}, warn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(plan.JoinBundleEnv, tc.env)
			}
			flags, out := renderOnly(t)
			stdout, stderr, code := runOfflineIn(t, tc.stdin, append(append([]string{"join"}, tc.args...), flags...)...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "nothing started")
			y, err := os.ReadFile(filepath.Join(out, "compose.yaml"))
			require.NoError(t, err)
			assert.Contains(t, string(y), "--address=10.52.0.7:6379", "the bundle was read")
			if tc.warn {
				assert.Contains(t, stderr, "Warning: a join bundle on the command line can be read by every user of this host (ps, /proc/PID/cmdline)")
				assert.Contains(t, stderr, "mltrain join --bundle-file FILE")
				assert.Contains(t, stderr, "| mltrain join -")
			} else {
				assert.NotContains(t, stderr, "Warning")
			}
			assert.NotContains(t, stderr, b.RayToken, "nothing printed holds the bundle's secrets")
			assert.NotContains(t, stdout, b.S3Secret)
		})
	}
}

// A bundle file others may read, a symbolic link and two sources at once
// are refused, each saying what to do; no message carries the bundle.
func TestJoinRefusesABundleFileOthersMayReadOrALink(t *testing.T) {
	b := testBundle(t)
	flags, _ := renderOnly(t)
	exposed := secretFile(t, b.Encode(), 0o644)
	_, stderr, code := runOffline(t, append([]string{"join", "--bundle-file", exposed}, flags...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "join bundle file "+exposed+" has mode 0644: the join bundle file is readable by others")
	assert.Contains(t, stderr, "Next: run 'chmod 600 "+exposed+"', then 'mltrain join --bundle-file "+exposed+" --cpus 16")
	assert.NotContains(t, stderr, b.Encode())

	groupOnly := secretFile(t, b.Encode(), 0o640)
	_, stderr, code = runOffline(t, append([]string{"join", "--bundle-file", groupOnly}, flags...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "has mode 0640")

	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(secretFile(t, b.Encode(), 0o600), link))
	_, stderr, code = runOffline(t, append([]string{"join", "--bundle-file", link}, flags...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "the join bundle file is a symbolic link (it is not followed)")
	assert.Contains(t, stderr, "Next: give --bundle-file the path of the file itself")

	_, stderr, code = runOffline(t, append([]string{"join", "--bundle-file", filepath.Join(t.TempDir(), "none")}, flags...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "open join bundle file")
	assert.Contains(t, stderr, "no such file or directory")

	_, stderr, code = runOfflineIn(t, b.Encode(), append([]string{"join", "-", "--bundle-file", secretFile(t, b.Encode(), 0o600)}, flags...)...)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "join takes the bundle one way, got both '-' (stdin) and --bundle-file")
}

// join --help names the forms that keep the bundle out of ps, and
// join-token prints one of them.
func TestJoinHelpAndJoinTokenNameTheFormsOffTheCommandLine(t *testing.T) {
	stdout, _, code := runOffline(t, "join", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"echo 'BUNDLE' | mltrain join -", "--bundle-file FILE", plan.JoinBundleEnv + "=BUNDLE", "ps, /proc/PID/cmdline"} {
		assert.Contains(t, stdout, want)
	}
	b := testBundle(t)
	assert.Equal(t, "echo '"+b.Encode()+"' | mltrain join -", joinLine(b))
}

// An interrupted join says how to run it again without the bundle it was
// given on the command line.
func TestAnInterruptedJoinsRerunLineHasNoBundle(t *testing.T) {
	b := testBundle(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalled{syscall.SIGINT})
	err := interrupted(ctx, errors.New("wait for this host's nodes: context canceled"), []string{"join", b.Encode(), "--workers", "2"})
	require.Error(t, err)
	assert.Contains(t, clierr.Hint(err), "run 'mltrain join BUNDLE --workers 2' again")
	assert.NotContains(t, err.Error()+clierr.Hint(err), b.Encode())
}
