package food11

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
)

func TestCorruptEntryAbortsAndRerunConverges(t *testing.T) {
	for _, method := range []string{MethodExtractor, MethodArchive} {
		t.Run(method, func(t *testing.T) { corruptEntryAbortsAndRerunConverges(t, method) })
	}
}

func corruptEntryAbortsAndRerunConverges(t *testing.T, method string) {
	e := newEnv(t)
	files, want := dataset("", small(), zip.Store)
	// Large stored entries first, so the engine has extracted some files
	// (past the stream's buffers) when the corrupt entry is read.
	var head []zfile
	for k := 0; k < 6; k++ {
		d := make([]byte, 1<<20)
		for i := range d {
			d[i] = byte(i*7 + k)
		}
		name := fmt.Sprintf("training/5_%d.jpg", 900+k)
		head = append(head, zfile{name: name, data: d, method: zip.Store})
		want[fmt.Sprintf("Food-11/training/class_05/5_%d.jpg", 900+k)] = string(d)
	}
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i * 13)
	}
	head = append(head, zfile{name: "training/5_999.jpg", data: big, method: zip.Store})
	want["Food-11/training/class_05/5_999.jpg"] = string(big)
	files = append(head, files...)
	good := writeZip(t, e.dir, "good.zip", files)
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	// Flip one byte inside the big entry's data: sizes stay, CRC-32 breaks.
	i := bytes.Index(b, big[1000:1064])
	require.Greater(t, i, 0)
	b[i+10] ^= 0xff
	corrupt := e.dir + "/corrupt.zip"
	require.NoError(t, os.WriteFile(corrupt, b, 0o644))

	ctx := context.Background()
	o := e.opts(corrupt)
	o.Method = method
	_, err = Run(ctx, e.eng, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CRC-32 mismatch")
	assert.Contains(t, err.Error(), "training/5_999.jpg")
	assert.True(t, errors.Is(err, zip.ErrChecksum))
	assert.Nil(t, e.manifest(t), "an aborted load leaves no manifest")
	_, err = Verify(ctx, e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels})
	require.Error(t, err)
	if method == MethodExtractor {
		// The extractor removes what it wrote: the volume holds nothing.
		assert.Contains(t, err.Error(), "has no Food-11 folder")
		h, err := openHelper(ctx, e.eng, e.volume, e.image, e.labels, false)
		require.NoError(t, err)
		has, err := h.exists(ctx, Root)
		h.close()
		require.NoError(t, err)
		assert.False(t, has, "the partial files were removed")
	} else {
		// The engine's archive API cannot delete: the next load clears them.
		assert.Contains(t, err.Error(), "no manifest")
	}

	res, err := Run(ctx, e.eng, e.opts(good))
	require.NoError(t, err)
	assert.Equal(t, method == MethodArchive, res.Rebuilt, "a partial load left behind is cleared first")
	assert.Equal(t, want, e.listBack(t))
}

func TestCancelledLoadThenRerunConverges(t *testing.T) {
	t.Run(MethodArchive, func(t *testing.T) {
		// Cancel once about a third of the stream has gone through.
		cancelledLoadThenRerunConverges(t, MethodArchive, func(e *testEnv, cancel func()) {
			e.eng.onCopy = func(r io.Reader) io.Reader { return &cancelAfter{r: r, n: 2 << 20, cancel: cancel} }
		})
	})
	t.Run(MethodExtractor, func(t *testing.T) {
		// Cancel at the extractor's first progress report: it is mid-way.
		cancelledLoadThenRerunConverges(t, MethodExtractor, func(e *testEnv, cancel func()) {})
	})
}

// cancelOnProgress cancels the run when the load reports its first bytes.
type cancelOnProgress struct {
	cancel func()
	once   sync.Once
}

func (c *cancelOnProgress) Report(ev progress.Event) {
	if ev.Kind == progress.Update && strings.HasPrefix(ev.Step, "load ") && ev.Current > 0 {
		c.once.Do(c.cancel)
	}
}

func cancelledLoadThenRerunConverges(t *testing.T, method string, arm func(*testEnv, func())) {
	e := newEnv(t)
	files, want := dataset("", CanonicalTotals, zip.Store)
	zp := writeZip(t, e.dir, "food11.zip", files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arm(e, cancel)
	o := e.opts(zp)
	o.Method = method
	if method == MethodExtractor {
		o.Reporter = &cancelOnProgress{cancel: cancel}
	}
	_, err := Run(ctx, e.eng, o)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	e.eng.onCopy = nil
	left, err := e.eng.Engine.ContainerList(context.Background(), map[string]string{LabelHelperVolume: e.volume})
	require.NoError(t, err)
	assert.Empty(t, left, "no helper outlives the run, so nothing writes into the volume after it returned")
	assert.Nil(t, e.manifest(t), "an interrupted load leaves no manifest")
	partial := e.listBack(t)
	assert.NotEmpty(t, partial, "the interrupted load had written some files")
	assert.Less(t, len(partial), len(want))

	res, err := Run(context.Background(), e.eng, e.opts(zp))
	require.NoError(t, err)
	assert.True(t, res.Rebuilt)
	assert.Equal(t, want, e.listBack(t))
	_, err = Verify(context.Background(), e.eng, VerifyOptions{Volume: e.volume, HelperImage: e.image, Labels: e.labels, Strict: true})
	require.NoError(t, err)
}

// cancelAfter cancels the run after n bytes went through.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n <= 0 && c.cancel != nil {
		c.cancel()
		c.cancel = nil
		time.Sleep(200 * time.Millisecond) // let the engine see part of the stream
	}
	return k, err
}
