package food11

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/lock"
	"github.com/mltrain/mltrain/internal/progress"
)

// rawZip writes a zip from headers, for entries writeZip cannot make.
func rawZip(t *testing.T, dir, name string, add func(w *zip.Writer)) string {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	add(w)
	require.NoError(t, w.Close())
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// lyingZip is a good zip whose central directory claims that its first
// entry holds 4 GiB.
func lyingZip(t *testing.T, dir string) string {
	files, _ := dataset("", small(), zip.Store)
	b, err := os.ReadFile(writeZip(t, dir, "good-for-lies.zip", files))
	require.NoError(t, err)
	i := bytes.Index(b, []byte{0x50, 0x4b, 0x01, 0x02}) // the first central directory header
	require.Greater(t, i, 0)
	binary.LittleEndian.PutUint32(b[i+20:], 0xfffffffe) // compressed size
	binary.LittleEndian.PutUint32(b[i+24:], 0xfffffffe) // uncompressed size
	p := filepath.Join(dir, "lying.zip")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// Issue 21 item 4: a refused zip creates no volume, and a header that lies
// about its size is "not a valid zip", not a disk problem.
func TestRefusedZipsCreateNoVolume(t *testing.T) {
	e := newEnv(t)
	entry := func(w *zip.Writer, name string, mode os.FileMode) {
		h := &zip.FileHeader{Name: name, Method: zip.Store}
		h.SetMode(mode)
		f, err := w.CreateHeader(h)
		require.NoError(t, err)
		_, _ = f.Write([]byte("x"))
	}
	oneSplit := func() string {
		files, _ := dataset("", map[string]int{"training": 11}, zip.Store)
		return writeZip(t, e.dir, "one-split.zip", files)
	}
	cases := []struct {
		name, zip, want string
	}{
		{"dotdot", rawZip(t, e.dir, "dotdot.zip", func(w *zip.Writer) { entry(w, "training/../../etc/0_1.jpg", 0o644) }), "path traversal"},
		{"absolute", rawZip(t, e.dir, "abs.zip", func(w *zip.Writer) { entry(w, "/training/0_1.jpg", 0o644) }), "absolute path"},
		{"symlink", rawZip(t, e.dir, "link.zip", func(w *zip.Writer) { entry(w, "training/0_1.jpg", os.ModeSymlink|0o777) }), "symlink"},
		{"empty", rawZip(t, e.dir, "empty.zip", func(*zip.Writer) {}), "split training is missing"},
		{"one split", oneSplit(), "split validation is missing"},
		{"lying header", lyingZip(t, e.dir), "is not a valid zip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), e.eng, e.opts(c.zip))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.False(t, errors.Is(err, errNoSpaceSentinel()), "never blamed on the disk")
			_, ierr := e.eng.VolumeInspect(context.Background(), e.volume)
			assert.True(t, docker.IsNotFound(ierr), "a refused zip creates no volume (inspect: %v)", ierr)
		})
	}
	var nz *NotZipError
	_, err := Run(context.Background(), e.eng, e.opts(lyingZip(t, e.dir)))
	require.ErrorAs(t, err, &nz)
	assert.ErrorIs(t, err, zip.ErrFormat)
	assert.Contains(t, err.Error(), "claims 4.0 GiB of data")
}

func errNoSpaceSentinel() error { return (&NoSpaceError{}).Unwrap() }

// tmpfsVolume makes the test's volume a small tmpfs: a disk of its own
// (each container that mounts it gets a fresh one, so it suits a load that
// fails, not one that must persist).
func tmpfsVolume(t *testing.T, e *testEnv, size string) {
	optionsVolume(t, e, map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=" + size})
}

func optionsVolume(t *testing.T, e *testEnv, opts map[string]string) {
	c, err := client.New(client.FromEnv)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.VolumeCreate(context.Background(), client.VolumeCreateOptions{Name: e.volume, Driver: "local",
		DriverOpts: opts, Labels: volumeLabels(e.labels)})
	require.NoError(t, err)
}

// Issue 21 item 3: --force empties a volume with driver options in place.
func TestForceKeepsTheVolumesDriverOptions(t *testing.T) {
	e := newEnv(t)
	// A volume on a folder of its own (the local driver binding a host
	// directory) stands in for a dataset disk.
	disk := t.TempDir()
	opts := map[string]string{"type": "none", "o": "bind", "device": disk}
	optionsVolume(t, e, opts)
	files, want := dataset("", small(), zip.Store)
	zp := writeZip(t, e.dir, "food11.zip", files)
	_, err := Run(context.Background(), e.eng, e.opts(zp))
	require.NoError(t, err)
	o := e.opts(zp)
	o.Force = true
	res, err := Run(context.Background(), e.eng, o)
	require.NoError(t, err)
	assert.True(t, res.Rebuilt)
	v, err := e.eng.VolumeInspect(context.Background(), e.volume)
	require.NoError(t, err)
	assert.Equal(t, opts, v.Options, "the dataset stays on its own disk")
	assert.Equal(t, want, e.listBack(t))
	_, err = os.Stat(filepath.Join(disk, Root, ManifestName))
	assert.NoError(t, err, "the files are on that disk")
}

// Issue 21 item 2: two loads of one volume at once leave one complete
// dataset; the second waits for the first and says so.
func TestConcurrentLoadsLeaveOneCompleteDataset(t *testing.T) {
	e := newEnv(t)
	files, want := dataset("", small(), zip.Store)
	zp := writeZip(t, e.dir, "food11.zip", files)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	notes := make([]*noteRecorder, 2)
	for i := range 2 {
		notes[i] = &noteRecorder{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := e.opts(zp)
			o.Reporter = notes[i]
			_, errs[i] = Run(context.Background(), e.eng, o)
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, want, e.listBack(t))
	require.NotNil(t, e.manifest(t))
	waited := notes[0].has("waiting for it") || notes[1].has("waiting for it")
	assert.True(t, waited, "one load waited visibly for the other")
}

type noteRecorder struct {
	mu    sync.Mutex
	notes []string
}

func (n *noteRecorder) Report(ev progress.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, ev.Message)
}

func (n *noteRecorder) has(s string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.notes {
		if bytes.Contains([]byte(m), []byte(s)) {
			return true
		}
	}
	return false
}

// --no-wait: a second load refuses at once, naming the first, and touches nothing.
func TestNoWaitRefusesWhileAnotherLoadHoldsTheVolume(t *testing.T) {
	e := newEnv(t)
	held, err := lockVolume(context.Background(), e.volume, LockOptions{Command: "mltrain data food11 --zip a.zip"}, nil)
	require.NoError(t, err)
	defer held.Release()
	files, _ := dataset("", small(), zip.Store)
	o := e.opts(writeZip(t, e.dir, "food11.zip", files))
	o.Lock.NoWait = true
	_, err = Run(context.Background(), e.eng, o)
	var he *lock.HeldError
	require.ErrorAs(t, err, &he)
	assert.Contains(t, err.Error(), "another `mltrain data food11 --zip a.zip` (pid")
	_, ierr := e.eng.VolumeInspect(context.Background(), e.volume)
	assert.True(t, docker.IsNotFound(ierr), "nothing was made")
}
