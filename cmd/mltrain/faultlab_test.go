package main

// The stand-in lab the fault table's rows share, and the ways a row meets
// it: the built mltrain run once, twice at the same moment, or killed part
// way.

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/state"
)

// faultLab is one stand-in lab that the rows of the fault table meet in
// order: each row starts from the lab the row before it left.
type faultLab struct {
	*standin
	t *testing.T
}

// outcome is what the command that meets a fault did.
type outcome struct {
	stdout, stderr string
	code           int
}

// mltrain runs the built mltrain with args, on this lab where args name it.
func (f *faultLab) mltrain(args ...string) outcome {
	f.t.Helper()
	o, e, c := runBin(f.t, binRun{args: args, env: f.env})
	return outcome{o, e, c}
}

// up runs this lab's up, with extra flags.
func (f *faultLab) up(extra ...string) outcome {
	f.t.Helper()
	return f.mltrain(f.upArgs(extra...)...)
}

// cmd is the lab's command line, as the next steps print it.
func (f *faultLab) cmd(words ...string) string {
	return strings.Join(append([]string{"mltrain", "--project", f.project, "--state-dir", f.stateDir}, words...), " ")
}

// re is s as a regexp matching itself.
func re(s string) string { return regexp.QuoteMeta(s) }

// network is the engine name of the lab's network.
func (f *faultLab) network() string { return f.project + "_default" }

// networks are the engine's networks named as the lab's, the lab's or not.
func (f *faultLab) networks() []docker.Network {
	f.t.Helper()
	nets, err := f.eng.NetworkList(context.Background(), f.network(), nil)
	require.NoError(f.t, err)
	return nets
}

// ids are the lab's containers, name -> ID: equal ids mean nothing was
// recreated.
func (f *faultLab) ids() map[string]string {
	f.t.Helper()
	list, err := f.eng.ContainerList(context.Background(), map[string]string{labels.Project: f.project})
	require.NoError(f.t, err)
	out := map[string]string{}
	for _, c := range list {
		out[c.Name] = c.ID
	}
	return out
}

// volumes are the names of the lab's own volumes (found by label).
func (f *faultLab) volumes() []string {
	f.t.Helper()
	vols, err := f.eng.VolumeList(context.Background(), map[string]string{labels.Project: f.project})
	require.NoError(f.t, err)
	var out []string
	for _, v := range vols {
		out = append(out, v.Name)
	}
	return out
}

// oneWorkingLab: every planned container, on one network of the lab's.
func (f *faultLab) oneWorkingLab() {
	f.t.Helper()
	assert.Len(f.t, f.ids(), 7, "head, two workers, minio, prometheus, grafana, jupyter")
	nets := f.networks()
	require.Len(f.t, nets, 1, "one network named %s", f.network())
	assert.Equal(f.t, f.project, nets[0].Labels[labels.Project])
	assert.Len(f.t, nets[0].Containers, 7, "every container on it")
}

// unchangedBy runs the lab's up and checks that it changed nothing.
func (f *faultLab) unchangedBy(before map[string]string) {
	f.t.Helper()
	r := f.up()
	require.Equal(f.t, 0, r.code, r.stderr)
	assert.Contains(f.t, r.stdout, "nothing changed")
	assert.Equal(f.t, before, f.ids(), "no container was recreated")
}

// started is a run of the built mltrain in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan int // its exit code
}

func (f *faultLab) start(args ...string) *started {
	f.t.Helper()
	s := &started{cmd: exec.Command(mltrainBinary(f.t), args...), done: make(chan int, 1)}
	s.cmd.Env = append(append(os.Environ(), "TERM=dumb"), f.env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	require.NoError(f.t, s.cmd.Start())
	go func() {
		err := s.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				s.done <- 128 + int(ws.Signal())
				return
			}
			s.done <- ee.ExitCode()
			return
		}
		s.done <- 0
	}()
	return s
}

// wait waits for the run to end (killing it after 4 minutes).
func (s *started) wait(t *testing.T) outcome {
	t.Helper()
	select {
	case code := <-s.done:
		return outcome{s.stdout.String(), s.stderr.String(), code}
	case <-time.After(4 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("%v did not end; stderr:\n%s", s.cmd.Args, s.stderr.String())
		return outcome{}
	}
}

// twoUps runs two ups of the lab at the same moment (two terminals).
func (f *faultLab) twoUps() outcome {
	f.t.Helper()
	a, b := f.start(f.upArgs()...), f.start(f.upArgs()...)
	ra, rb := a.wait(f.t), b.wait(f.t)
	return outcome{ra.stdout + rb.stdout, ra.stderr + rb.stderr, max(ra.code, rb.code)}
}

// signalledUp starts the lab's up and sends it sig once it has made the
// lab's first container.
func (f *faultLab) signalledUp(sig syscall.Signal) outcome {
	f.t.Helper()
	s := f.start(f.upArgs()...)
	require.Eventually(f.t, func() bool { return len(f.ids()) > 0 }, 3*time.Minute, 100*time.Millisecond,
		"up made no container; stderr:\n%s", s.stderr.String())
	require.NoError(f.t, s.cmd.Process.Signal(sig))
	return s.wait(f.t)
}

// holdPort listens on port on loopback, as another program would, until
// the returned func (or the row's end) stops it.
func holdPort(t *testing.T, port int) func() {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return func() { l.Close() }
}

// moveAway renames the lab's state dir to a new place and returns it.
func (f *faultLab) moveAway() string {
	f.t.Helper()
	to := f.t.TempDir() + "/state-kept"
	require.NoError(f.t, os.Rename(f.stateDir, to))
	return to
}

// cutInHalf truncates the lab's state file to half its length.
func (f *faultLab) cutInHalf(name string) []byte {
	f.t.Helper()
	p := state.Dir(f.stateDir).File(name)
	b, err := os.ReadFile(p)
	require.NoError(f.t, err)
	require.NoError(f.t, os.WriteFile(p, b[:len(b)/2], 0o600))
	return b[:len(b)/2]
}

// syncBuffer is a bytes.Buffer that a running command writes while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
