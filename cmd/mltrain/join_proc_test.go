package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// joinProc is a real mltrain join process planning from a FIFO (--gpus-from):
// it reads its bundle first, then blocks reading the FIFO, so the test reads
// its /proc while it runs, then feeds the FIFO and lets it finish.
type joinProc struct {
	cmd    *exec.Cmd
	fifo   string
	out    string   // --out: where compose.yaml lands
	w      *os.File // the FIFO's writing end, once the join reads it
	stderr bytes.Buffer
	done   chan error
}

func startJoin(t *testing.T, args []string, stdin string) *joinProc {
	t.Helper()
	bin := mltrainBinary(t)
	dir := t.TempDir()
	p := &joinProc{fifo: filepath.Join(dir, "gpus.json"), out: filepath.Join(dir, "out"), done: make(chan error, 1)}
	require.NoError(t, syscall.Mkfifo(p.fifo, 0o600))
	args = append(append([]string{"join"}, args...), "--render-only", "--out", p.out, "--gpus-from", p.fifo,
		"--cpus", "16", "--memory", "64g", "--node-ip", "10.52.0.8")
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), "HOME="+dir)
	p.cmd.Stdin = strings.NewReader(stdin)
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// attach waits until the join opens the FIFO to read it, which it does
// only after reading its bundle, and holds the FIFO's writing end, so the
// join stays blocked (alive) reading it until finish.
func (p *joinProc) attach(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		// Opening for writing without blocking fails (ENXIO) until a
		// reader has it open.
		if fd, err := syscall.Open(p.fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			p.w = os.NewFile(uintptr(fd), p.fifo)
			t.Cleanup(func() { p.w.Close() })
			return
		}
		select {
		case err := <-p.done:
			t.Fatalf("join exited before it read its GPUs: %v\n%s", err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("join never opened %s", p.fifo)
}

// proc is /proc/PID/name of the running join.
func (p *joinProc) proc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/" + name)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), p.cmd.Path) || name != "cmdline", "not mltrain's command line: %q", b)
	return string(b)
}

// finish hands the join its GPU report and waits for it to succeed.
func (p *joinProc) finish(t *testing.T) string {
	t.Helper()
	_, err := p.w.Write([]byte(twoNvidia))
	require.NoError(t, err)
	require.NoError(t, p.w.Close())
	select {
	case err := <-p.done:
		require.NoError(t, err, p.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("join did not finish:\n%s", p.stderr.String())
	}
	y, err := os.ReadFile(filepath.Join(p.out, "compose.yaml"))
	require.NoError(t, err)
	return string(y)
}

// bundleSecrets are the parts of a bundle nobody else on the host may read.
func bundleSecrets(b plan.JoinBundle) map[string]string {
	enc := b.Encode()
	return map[string]string{"Ray token": b.RayToken, "MinIO access key": b.S3Access, "MinIO secret": b.S3Secret,
		"bundle": enc, "bundle's payload": strings.TrimPrefix(enc, "mltrain-join-v1.")[:40]}
}

// A real join given its bundle by --bundle-file, or by join-token's line on
// stdin, shows no part of it in /proc/PID/cmdline (what ps shows every user)
// nor in its environment; given as an argument, the bundle is there, which
// is what the warning says.
func TestJoinKeepsTheBundleOutOfItsCommandLine(t *testing.T) {
	b := testBundle(t)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"bundle file", []string{"--bundle-file", secretFile(t, b.Encode()+"\n", 0o600)}, ""},
		{"stdin", []string{"-"}, b.Encode() + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startJoin(t, tc.args, tc.stdin)
			p.attach(t)
			cmdline, environ := p.proc(t, "cmdline"), p.proc(t, "environ")
			assert.Contains(t, cmdline, "join\x00")
			for what, s := range bundleSecrets(b) {
				assert.NotContains(t, cmdline, s, "the %s is in join's command line", what)
				assert.NotContains(t, environ, s, "the %s is in join's environment", what)
			}
			y := p.finish(t)
			assert.Contains(t, y, "--address=10.52.0.7:6379", "join read the bundle")
			assert.Contains(t, y, b.RayToken, "the workers get the bundle's token")
			assert.NotContains(t, p.stderr.String(), "Warning")
		})
	}
	t.Run("argument", func(t *testing.T) {
		p := startJoin(t, []string{b.Encode()}, "")
		p.attach(t)
		assert.Contains(t, p.proc(t, "cmdline"), b.Encode(), "what the check above looks for is there when it leaks")
		p.finish(t)
		assert.Contains(t, p.stderr.String(), "Warning: a join bundle on the command line can be read by every user of this host")
	})
}

// The line join-token prints runs in a plain POSIX shell and gives join
// the bundle on stdin.
func TestJoinTokensLineRunsInAShell(t *testing.T) {
	dir := state.Dir(t.TempDir())
	creds, _, err := dir.CreateCredentials()
	require.NoError(t, err)
	facts := host.Facts{GPUs: gpu.Report{GPUs: []gpu.GPU{{Vendor: gpu.NVIDIA, Index: 0, UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000001", Name: "NVIDIA A100"}}},
		CPUs: 32, MemoryBytes: 128 << 30, HostIP: "10.52.0.7", NodeIP: "10.52.0.7"}
	p, err := plan.New(facts, plan.Options{AllowJoin: true}, creds)
	require.NoError(t, err)
	require.NoError(t, dir.SaveState(state.State{Project: p.Project, Plan: p}))

	stdout, stderr, code := runOffline(t, "join-token", "--state-dir", dir.Path())
	require.Equal(t, 0, code, stderr)
	line := strings.TrimSpace(stdout)
	require.True(t, strings.HasPrefix(line, "echo 'mltrain-join-v1.") && strings.HasSuffix(line, "' | mltrain join -"), line)
	assert.Contains(t, stderr, "--bundle-file FILE")

	out := t.TempDir()
	sh := strings.TrimSuffix(line, "mltrain join -") + mltrainBinary(t) + " join - --render-only --out " + out +
		" --gpus-from " + gpusFile(t, twoNvidia) + " --cpus 16 --memory 64g --node-ip 10.52.0.8"
	cmd := exec.Command("/bin/sh", "-c", sh)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	res, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.False(t, errors.As(err, &exit), "%s", res)
	require.NoError(t, err)
	y, err := os.ReadFile(filepath.Join(out, "compose.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(y), creds.RayAuthToken, "join got the lab's token from the line")
}
