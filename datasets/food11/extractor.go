package food11

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// Load methods: how the images reach the volume.
const (
	MethodAuto      = ""          // the extractor when it can run, else the archive API
	MethodExtractor = "extractor" // this binary in a helper container reads the zip, writes the volume
	MethodArchive   = "archive"   // a tar streamed through the engine's archive API
)

// errNoExtractor means the extractor could not start; nothing was written,
// so the archive path can take over.
var errNoExtractor = errors.New("the in-volume extractor is not available")

// selfFiles are the host files that run this binary in an empty container:
// the executable and, when it is dynamically linked, its loader and the
// shared objects this process has mapped (named by soname, as the loader
// looks them up).
type selfFiles struct {
	exe    string
	loader string            // "" for a static executable
	libs   map[string]string // soname -> host path
}

const (
	xExe    = "/x/mltrain"
	xLoader = "/x/ld.so"
	xLibDir = "/x/lib"
	xZip    = "/x/food11.zip"
)

func findSelf() (selfFiles, error) {
	if runtime.GOOS != "linux" {
		return selfFiles{}, fmt.Errorf("%w: mltrain runs on %s, the engine's containers on Linux", errNoExtractor, runtime.GOOS)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return selfFiles{}, fmt.Errorf("%w: own executable: %v", errNoExtractor, err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		return selfFiles{}, fmt.Errorf("%w: own executable %s: %v", errNoExtractor, exe, err)
	}
	defer f.Close()
	s := selfFiles{exe: exe, libs: map[string]string{}}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return s, fmt.Errorf("%w: read the ELF interpreter of %s: %v", errNoExtractor, exe, err)
		}
		if s.loader, err = filepath.EvalSymlinks(strings.TrimRight(string(b), "\x00")); err != nil {
			return s, fmt.Errorf("%w: ELF interpreter: %v", errNoExtractor, err)
		}
	}
	if s.loader == "" {
		return s, nil
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return s, fmt.Errorf("%w: %v", errNoExtractor, err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 || !strings.Contains(line[i:], ".so") || strings.HasSuffix(line, "(deleted)") {
			continue
		}
		p := line[i:]
		name := filepath.Base(p)
		if lf, err := elf.Open(p); err == nil {
			if so, err := lf.DynString(elf.DT_SONAME); err == nil && len(so) > 0 {
				name = so[0]
			}
			lf.Close()
		}
		s.libs[name] = p
	}
	return s, nil
}

// spec is the extractor container: the volume, and read-only the zip and
// this binary with its libraries. Without a zip it empties the volume.
func (s selfFiles) spec(h *helper, zipPath, digest string) docker.ContainerSpec {
	ro := func(src, dst string) mount.Mount {
		return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: true}
	}
	mounts := []mount.Mount{{Type: mount.TypeVolume, Source: h.volume, Target: mountPoint}, ro(s.exe, xExe)}
	env := []string{extractorEnv + "=1", extractorClearEnv + "=1"}
	if zipPath != "" {
		mounts = append(mounts, ro(zipPath, xZip))
		env = []string{extractorEnv + "=1", extractorZipEnv + "=" + xZip, extractorDigestEnv + "=" + digest}
	}
	cmd := []string{xExe}
	if s.loader != "" {
		mounts = append(mounts, ro(s.loader, xLoader))
		for name, p := range s.libs {
			mounts = append(mounts, ro(p, xLibDir+"/"+name))
		}
		cmd = []string{xLoader, "--library-path", xLibDir, xExe}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return docker.ContainerSpec{
		Name: fmt.Sprintf("mltrain-%s-extract-%s", h.volume, hex.EncodeToString(rnd[:])),
		Config: &container.Config{
			Image:           h.image,
			Entrypoint:      cmd,
			Cmd:             []string{},
			Env:             env,
			Labels:          h.labels(),
			NetworkDisabled: true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    "none",
			ReadonlyRootfs: true, // it writes only into the volume
			Mounts:         mounts,
			LogConfig:      container.LogConfig{Type: "json-file"}, // its output is the protocol: it must be readable back
		},
	}
}

// extract runs the extractor for the plan and waits for it. An error that
// wraps errNoExtractor left the volume untouched.
func (h *helper) extract(ctx context.Context, p *plan, zipPath string, rep progress.Reporter, step string) (maxRSS int64, err error) {
	if !selfExtractor.Load() {
		return 0, fmt.Errorf("%w: this binary's main does not call food11.ExtractorMain", errNoExtractor)
	}
	s, err := findSelf()
	if err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(zipPath)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errNoExtractor, err)
	}
	id, err := h.eng.ContainerCreate(ctx, s.spec(h, abs, planDigest(p)))
	if err != nil {
		return 0, fmt.Errorf("%w: the engine cannot mount this host's files: %v", errNoExtractor, err)
	}
	defer func() { // also when ctx ended: it must stop writing into the volume
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.eng.ContainerRemove(rctx, id, true)
	}()
	if err := h.eng.ContainerStart(ctx, id); err != nil {
		return 0, fmt.Errorf("%w: start: %v", errNoExtractor, err)
	}
	out := &protocol{rep: rep, step: step, total: p.bytes}
	lerr := h.eng.ContainerLogs(ctx, id, docker.LogsOptions{Follow: true}, out, &out.stderr)
	if ctx.Err() != nil {
		return 0, fmt.Errorf("load into volume %s interrupted: %w", h.volume, ctx.Err())
	}
	d, ierr := h.eng.ContainerInspect(ctx, id)
	if lerr != nil || ierr != nil {
		return 0, fmt.Errorf("load into volume %s: follow the extractor: %w", h.volume, errors.Join(lerr, ierr))
	}
	out.flush()
	rss, err := out.result(h.volume, zipPath, d, p)
	h.nameFilesystem(err)
	return rss, err
}

// protocol reads the extractor's output lines as they come.
type protocol struct {
	rep    progress.Reporter
	step   string
	total  int64
	buf    []byte
	stderr tailBuffer
	ready  bool
	last   extractorMsg // the last Done, Error or Mismatch
	other  tailBuffer   // stdout that is not the protocol (a loader's message)
}

func (pr *protocol) Write(b []byte) (int, error) {
	pr.buf = append(pr.buf, b...)
	for {
		i := bytes.IndexByte(pr.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		pr.line(pr.buf[:i])
		pr.buf = pr.buf[i+1:]
	}
}

func (pr *protocol) flush() {
	if len(pr.buf) > 0 {
		pr.line(pr.buf)
		pr.buf = nil
	}
}

func (pr *protocol) line(l []byte) {
	var m extractorMsg
	if err := json.Unmarshal(l, &m); err != nil {
		_, _ = pr.other.Write(append(l, '\n'))
		return
	}
	switch {
	case m.Ready:
		pr.ready = true
	case m.Done || m.Error != "" || m.Mismatch != "":
		pr.last = m
	default:
		progress.Advance(pr.rep, pr.step, m.Bytes, pr.total, "bytes")
	}
}

// result turns what the extractor said, and how it exited, into Load's error.
func (pr *protocol) result(volume, zipPath string, d docker.ContainerDetails, p *plan) (int64, error) {
	m := pr.last
	why := strings.TrimSpace(pr.other.String() + pr.stderr.String())
	if !pr.ready {
		switch {
		case m.Mismatch != "":
			return 0, fmt.Errorf("%w: the engine's host holds another file at %s", errNoExtractor, zipPath)
		case m.Error != "":
			why = m.Error
		case why == "":
			why = fmt.Sprintf("exit code %d", d.ExitCode)
		}
		return 0, fmt.Errorf("%w: it did not start: %s", errNoExtractor, why)
	}
	switch {
	case m.Done && m.Files == len(p.entries) && m.Bytes == p.bytes && d.ExitCode == 0:
		progress.Advance(pr.rep, pr.step, m.Bytes, pr.total, "bytes")
		return m.MaxRSS, nil
	case m.Done:
		return 0, fmt.Errorf("load into volume %s: the extractor wrote %d files (%d bytes), the plan has %d (%d bytes)", volume, m.Files, m.Bytes, len(p.entries), p.bytes)
	case m.CRC:
		return 0, clierr.WithHint(fmt.Errorf("%s: entry %s: %w", zipPath, m.Entry, remoteError{m.Error, zip.ErrChecksum}),
			"download the zip again (delete the cached copy) or check the zip file you gave")
	case m.NoSpace:
		return 0, &RerunError{Err: &NoSpaceError{Volume: volume, Entry: m.Entry, Need: m.Need, Free: m.Free, Size: m.Size, Cleaned: m.Cleaned},
			Do: "free space on that filesystem, or load into a volume on a bigger disk with --volume NAME"}
	case m.Error != "":
		return 0, &RerunError{Err: fmt.Errorf("load into volume %s: entry %s: %s", volume, m.Entry, m.Error), Do: "check the volume's disk"}
	}
	oom := ""
	if d.OOMKilled {
		oom = ", killed for lack of memory"
	}
	return 0, &RerunError{Err: fmt.Errorf("load into volume %s: the extractor exited with code %d%s before it finished: %s", volume, d.ExitCode, oom, why)}
}

// remoteError is an error reported by the extractor: its text, and the
// sentinel it wrapped there so errors.Is works here too.
type remoteError struct {
	msg string
	is  error
}

func (e remoteError) Error() string { return e.msg }
func (e remoteError) Unwrap() error { return e.is }

// tailBuffer keeps the last 4 KiB written to it, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4<<10 {
		t.b = t.b[len(t.b)-4<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
