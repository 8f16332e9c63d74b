package main

// Running the built mltrain against a stand-in lab (lab/labtest: FROM-scratch
// stand-ins and a real MinIO) on the real engine, and, for the read-only
// state dir, inside a mount namespace where that dir is a read-only bind
// mount: the kernel refuses every write with EROFS, root included, which
// permissions alone never do for root (tests run as root).

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// standin is a stand-in lab's command line for one test: the project (the
// longest --project allowed, so every derived name meets the engine), its
// own state dir, every role's image a stand-in, free loopback ports, a CPU
// rehearsal host. Containers and volumes go when the test ends.
type standin struct {
	eng      docker.Engine
	project  string
	stateDir string
	opts     plan.Options
	env      []string
}

func newStandin(t *testing.T) *standin {
	t.Helper()
	eng := dockertest.Engine(t)
	o := labtest.LabOptions(t, eng, "mltc")
	s := &standin{eng: eng, opts: o, stateDir: filepath.Join(t.TempDir(), "state")}
	s.project = o.Project + "-" + strings.Repeat("x", service.MaxProjectLen-len(o.Project)-1)
	s.opts.Project, s.opts.DataVolume = s.project, s.project+"-food11"
	// A CPU rehearsal: an empty sysfs (no AMD GPU); a HOME of its own.
	s.env = []string{gpu.RootEnv + "=" + t.TempDir(), "HOME=" + t.TempDir()}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _ = compose.Down(ctx, eng, s.project, time.Second, true, nil)
		_ = eng.VolumeRemove(ctx, s.opts.DataVolume)
	})
	return s
}

// lab are the global flags naming this lab.
func (s *standin) lab() []string {
	return []string{"--project", s.project, "--state-dir", s.stateDir}
}

// upArgs is `mltrain up` of this lab, then extra.
func (s *standin) upArgs(extra ...string) []string {
	args := append([]string{"up"}, s.lab()...)
	args = append(args, "--pull", "never", "--bind", "127.0.0.1", "--host-ip", "127.0.0.1", "--timeout", "2m",
		"--data-volume", s.opts.DataVolume)
	for _, r := range service.Roles() {
		args = append(args, "--image-"+string(r), s.opts.Images[r])
	}
	names := make([]string, 0, len(s.opts.Ports))
	for n := range s.opts.Ports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, "--port", fmt.Sprintf("%s=%d", n, s.opts.Ports[n]))
	}
	return append(args, extra...)
}

// containers are the lab's container names.
func (s *standin) containers(t *testing.T) []string {
	list, err := s.eng.ContainerList(context.Background(), map[string]string{labels.Project: s.project})
	require.NoError(t, err)
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// binRun is one run of the built mltrain with stdout and stderr piped.
type binRun struct {
	args []string
	env  []string
	// readOnly is bind-mounted read-only over itself for this run only, in
	// a mount namespace of its own (the host's mounts are untouched).
	readOnly string
}

func runBin(t *testing.T, r binRun) (stdout, stderr string, code int) {
	t.Helper()
	bin := mltrainBinary(t)
	cmd := exec.Command(bin, r.args...)
	if r.readOnly != "" {
		requireMountNamespace(t)
		cmd = exec.Command("/bin/sh", append([]string{"-c", remountRO, "sh", r.readOnly, bin}, r.args...)...)
		// Go makes / private (MS_REC|MS_PRIVATE) in a new mount namespace.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), r.env...)
	return runToExit(t, cmd, 4*time.Minute, r.args)
}

// remountRO makes $1 a read-only bind mount of itself, then runs the rest.
const remountRO = `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`

var mountNS struct {
	once sync.Once
	err  error
}

// requireMountNamespace checks once that this process may make a mount
// namespace with a read-only bind mount (root with CAP_SYS_ADMIN); outside
// CI a host that cannot skips, under CI=true it fails.
func requireMountNamespace(t *testing.T) {
	t.Helper()
	mountNS.once.Do(func() {
		dir, err := os.MkdirTemp("", "mltrain-ro-")
		if err != nil {
			mountNS.err = err
			return
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("/bin/sh", "-c", remountRO, "sh", dir, "/bin/sh", "-c", `! touch "$0/x" 2>/dev/null`, dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		if out, err := cmd.CombinedOutput(); err != nil {
			mountNS.err = fmt.Errorf("a read-only bind mount in a new mount namespace: %v\n%s", err, out)
		}
	})
	if mountNS.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", mountNS.err)
		}
		t.Skipf("cannot make a read-only state dir here: %v", mountNS.err)
	}
}

// snapshot is every entry under dir with its size, mode and modification
// time: two equal snapshots mean nothing was created, changed or removed.
// A missing dir is the empty snapshot.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	require.NoError(t, err)
	return out
}

// nextLines are the Error (all its lines) and Next lines main printed last
// on stderr.
func nextLines(stderr string) (errText, next string) {
	i := strings.LastIndex(stderr, "Error: ")
	if i < 0 {
		return "", ""
	}
	errText, next, _ = strings.Cut(strings.TrimSuffix(stderr[i+len("Error: "):], "\n"), "\nNext: ")
	return errText, next
}

// container is the name of service's container in the stand-in lab, found
// by the lab's labels as mltrain finds it.
func (s *standin) container(t *testing.T, service string) string {
	t.Helper()
	cs, err := s.eng.ContainerList(context.Background(), map[string]string{labels.Project: s.project, labels.Service: service})
	require.NoError(t, err)
	require.Len(t, cs, 1, "one container of %s", service)
	return cs[0].Name
}
