package main

// The harness that runs the built mltrain as a user does: under a real
// pseudo-terminal (github.com/creack/pty), and piped. The in-process runner
// (run, runCLI) never has a terminal, so the live view, its redraws, Ctrl-C
// and what the terminal is left with are only seen here.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/term"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/progress/progresstest"
)

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{built.dir, zips.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// mltrainBinary builds this command once per test process.
func mltrainBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "mltrain-bin-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "mltrain")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	return built.bin
}

// Input is typed into the terminal once the output so far satisfies When
// ("\x03" is Ctrl-C: the terminal sends SIGINT to the foreground process).
type Input struct {
	When func(out string) bool
	Keys string
	// Signal, when set, is sent to mltrain instead of typing Keys (SIGTERM
	// as a supervisor sends it, SIGHUP as a dropped session).
	Signal syscall.Signal
}

// TermOptions is one run of mltrain under a pty.
type TermOptions struct {
	Args  []string
	Env   []string      // added to this process's environment (TERM=xterm-256color is set)
	Input []Input       // typed in order
	Limit time.Duration // how long it may run before the test fails and it is killed; default 3m
}

// TermRun is what a terminal user saw.
type TermRun struct {
	Output  string   // every byte mltrain wrote to the terminal (stdout and stderr), "\r\n" as the pty makes it
	Screen  []string // the lines the terminal keeps once redraws have erased the rows
	Redraws int      // how many times the live view redrew its rows
	Code    int      // exit code; -1 when it had to be killed
}

// runTerm runs the built mltrain under a fresh 120x30 pty as the session
// leader with the pty as its controlling terminal, reads everything it
// writes until it exits, and checks what it leaves the terminal in: exited
// within the limit, the cursor shown if it was hidden, no escape sequence
// cut short, the terminal's settings as they were.
func runTerm(t *testing.T, o TermOptions) TermRun {
	t.Helper()
	if o.Limit == 0 {
		o.Limit = 3 * time.Minute
	}
	bin := mltrainBinary(t)
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 120}))
	before, err := term.GetState(int(tty.Fd()))
	require.NoError(t, err)

	cmd := exec.Command(bin, o.Args...)
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), o.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	require.NoError(t, cmd.Start())

	var mu sync.Mutex
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		inputs := o.Input
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			sofar := out.String()
			mu.Unlock()
			for len(inputs) > 0 && inputs[0].When(sofar) {
				if inputs[0].Signal != 0 {
					_ = cmd.Process.Signal(inputs[0].Signal)
				} else {
					_, _ = ptmx.Write([]byte(inputs[0].Keys))
				}
				inputs = inputs[1:]
			}
			if err != nil {
				read <- err // EIO once every end of the terminal is closed
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	run := TermRun{Code: -1}
	select {
	case err := <-exited:
		run.Code = exitCode(t, err)
	case <-time.After(o.Limit):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGQUIT) // its goroutine dump goes to the terminal
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		t.Errorf("mltrain %s did not exit within %s", strings.Join(o.Args, " "), o.Limit)
	}
	after, err := term.GetState(int(tty.Fd()))
	require.NoError(t, err)
	tty.Close()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Error("the terminal did not close after mltrain exited")
	}
	mu.Lock()
	run.Output = out.String()
	mu.Unlock()
	run.Screen, run.Redraws = progresstest.Screen(run.Output)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mltrain %s wrote to the terminal:\n%q", strings.Join(o.Args, " "), run.Output)
		}
	})

	assert.Equal(t, before, after, "the terminal's settings are as they were")
	if i := strings.LastIndex(run.Output, progress.HideCursor); i >= 0 {
		assert.Contains(t, run.Output[i:], progress.ShowCursor, "the cursor it hid is shown again")
	}
	assert.False(t, danglingEscape(run.Output), "the output ends inside an escape sequence")
	return run
}

// danglingEscape reports whether out ends inside an escape sequence (an ESC
// or a CSI without its final byte), which would leave the terminal waiting.
func danglingEscape(out string) bool {
	i := strings.LastIndexByte(out, 0x1b)
	if i < 0 {
		return false
	}
	seq := out[i+1:]
	if seq == "" {
		return true
	}
	if seq[0] != '[' {
		return false
	}
	for _, c := range []byte(seq[1:]) {
		if c >= 0x40 && c <= 0x7e {
			return false // the final byte
		}
	}
	return true
}

// runPiped runs the built mltrain with stdout and stderr as pipes.
func runPiped(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(mltrainBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), env...)
	return runToExit(t, cmd, 3*time.Minute, args)
}

// runToExit runs cmd with piped output, killing it (and failing the test)
// when it has not exited within limit.
func runToExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, args []string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		code = exitCode(t, err)
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
		t.Errorf("mltrain %s did not exit within %s; stderr:\n%s", strings.Join(args, " "), limit, e.String())
		code = -1
	}
	return o.String(), e.String(), code
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Errorf("wait: %v", err)
		return -1
	}
}

// The harness itself: a usage error in a terminal (no live view) and
// piped, and that it notices a terminal left with a hidden cursor.
func TestHarnessRunsTheBinary(t *testing.T) {
	run := runTerm(t, TermOptions{Args: []string{"up", "extra-arg"}, Limit: time.Minute})
	assert.Equal(t, 2, run.Code)
	assert.Equal(t, []string{
		`Error: mltrain up takes no arguments (got "extra-arg")`,
		"Next: run 'mltrain up --help'",
	}, run.Screen)
	assert.Zero(t, run.Redraws)

	stdout, stderr, code := runPiped(t, nil, "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "mltrain dev\n"), "version's first line: %q", stdout)
	assert.Empty(t, stderr)

	assert.True(t, danglingEscape("ok\x1b[12"))
	assert.True(t, danglingEscape("ok\x1b"))
	assert.False(t, danglingEscape("ok\x1b[12A\x1b[J done"))
}

// ansi reports whether s holds any escape sequence (piped output must not).
func ansi(s string) bool { return strings.ContainsRune(s, 0x1b) }
