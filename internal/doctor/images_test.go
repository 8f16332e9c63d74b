package doctor

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/ports/portstest"
)

// labImages are four images from Docker Hub and one from quay.io, as the
// lab's defaults; asked records the vendor doctor asked for.
func labImages(asked *gpu.Vendor) func(gpu.Vendor) (images.Request, error) {
	return func(v gpu.Vendor) (images.Request, error) {
		*asked = v
		return images.Request{Pull: []string{"rayproject/ray:2.54.0", "minio/minio:1", "prom/prometheus:2", "grafana/grafana:3",
			"quay.io/jupyter/pytorch-notebook:4"}}, nil
	}
}

// dialer answers per address and counts the dials.
type dialer struct {
	mu    sync.Mutex
	calls map[string]int
	errs  map[string]error
}

func (d *dialer) dial(_ context.Context, addr string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	d.calls[addr]++
	return d.errs[addr]
}

func (h *healthy) runImages(dial *dialer) (Result, gpu.Vendor) {
	var asked gpu.Vendor
	deps := h.deps()
	deps.DialRegistry = dial.dial
	return Run(context.Background(), deps, Options{Project: "mltrain", Driver: need, Images: labImages(&asked)}), asked
}

func TestImagesRowPassesWhenTheImagesAreHere(t *testing.T) {
	h := newHealthy()
	h.eng.Images = map[string]docker.Image{}
	for _, ref := range []string{"rayproject/ray:2.54.0", "minio/minio:1", "prom/prometheus:2", "grafana/grafana:3", "quay.io/jupyter/pytorch-notebook:4"} {
		h.eng.Images[ref] = docker.Image{}
	}
	var d dialer
	r, vendor := h.runImages(&d)
	assert.Equal(t, gpu.NVIDIA, vendor, "the images of the host's GPUs")
	c := row(t, r, "images")
	assert.Equal(t, Pass, c.Status)
	assert.Equal(t, "all 5 images the lab uses are on this host", c.Detail)
	assert.Empty(t, d.calls, "no registry is needed")
}

// The images are missing and their registries answer: each registry is
// dialled once, however many images it holds.
func TestImagesRowPassesWhenTheRegistriesAnswer(t *testing.T) {
	h := newHealthy()
	h.eng.Images = map[string]docker.Image{"minio/minio:1": {}}
	var d dialer
	r, _ := h.runImages(&d)
	c := row(t, r, "images")
	assert.Equal(t, Pass, c.Status, c.Detail)
	assert.Equal(t, "1 of the 5 images the lab uses are on this host; 'up' pulls the other 4 from registry-1.docker.io, quay.io (reached)", c.Detail)
	assert.Equal(t, map[string]int{"registry-1.docker.io:443": 1, "quay.io:443": 1}, d.calls)
}

// A node that reaches no registry: a warning naming each registry, why,
// and the images it holds, with both ways to have the images.
func TestImagesRowWarnsWhenARegistryIsOutOfReach(t *testing.T) {
	h := newHealthy()
	h.report = gpu.Report{GPUs: []gpu.GPU{}, Problems: []gpu.Problem{}}
	d := dialer{errs: map[string]error{
		"registry-1.docker.io:443": &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "registry-1.docker.io", IsNotFound: true}},
		"quay.io:443":              &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	}}
	r, vendor := h.runImages(&d)
	assert.Equal(t, gpu.Vendor(""), vendor, "no GPU: the CPU rehearsal's images")
	c := row(t, r, "images")
	assert.Equal(t, Warn, c.Status)
	assert.True(t, r.OK, "a warning: up may still run with images loaded or named")
	assert.Equal(t, "0 of the 5 images the lab uses are on this host; 'up' must pull the other 5, and this host cannot reach these registries: "+
		"registry-1.docker.io (cannot resolve its name: no such host; for rayproject/ray:2.54.0, minio/minio:1, prom/prometheus:2, grafana/grafana:3); "+
		"quay.io (refused the connection; for quay.io/jupyter/pytorch-notebook:4)", c.Detail)
	assert.Contains(t, c.Fix, "'mltrain images load FILE'")
	assert.Contains(t, c.Fix, "--image-worker")
	require.NotNil(t, c.Next)
	assert.Contains(t, c.FixWith(func(w ...string) string { return "mltrain --project lab2 " + w[0] }), "'mltrain --project lab2 images'", "the fix's commands act on the user's lab")

	d = dialer{errs: map[string]error{"quay.io:443": context.DeadlineExceeded}}
	r, _ = h.runImages(&d)
	c = row(t, r, "images")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "cannot reach their registry: quay.io (no answer within 5s; for quay.io/jupyter/pytorch-notebook:4); reached: registry-1.docker.io")
}

func TestImagesRowWithoutAnEngineIsNotChecked(t *testing.T) {
	h := newHealthy()
	h.connErr = errors.New("connection refused")
	var d dialer
	r, _ := h.runImages(&d)
	c := row(t, r, "images")
	assert.Equal(t, Warn, c.Status)
	assert.Contains(t, c.Detail, "not checked")
	assert.Empty(t, d.calls)
}

// The real dialer: a listening registry is reached, a closed port refuses,
// a name that cannot exist does not resolve.
func TestDialRegistry(t *testing.T) {
	ctx := context.Background()
	assert.NoError(t, DialRegistry(ctx, portstest.Hangup(t)))

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := closed.Addr().String()
	require.NoError(t, closed.Close())
	err = DialRegistry(ctx, addr)
	require.Error(t, err)
	assert.Equal(t, "refused the connection", unreachable(err))

	err = DialRegistry(ctx, "registry.invalid:443")
	require.Error(t, err)
	assert.Contains(t, unreachable(err), "cannot resolve its name")
}
