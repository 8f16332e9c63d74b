package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// fakeLab runs the lab's whole up/down sequence against the fake engine,
// without Docker: when a container starts, the ports it publishes are bound
// on this host (as the engine's proxy binds them) and answer with doubles of
// the service inside: the Ray double behind the dashboard port, the S3
// double behind MinIO's API port, plain 200s for Grafana, Prometheus and
// Jupyter. A taken port fails the start as it does on the engine.
type fakeLab struct {
	t     *testing.T
	eng   *fake.Engine
	ray   *raytest.Modelled
	s3    *storetest.Server
	opts  lifecycle.UpOptions
	state state.Dir
	// rayBlind: no raylet reaches Ray, whatever runs (a cluster that never
	// forms, or whose raylets all stopped answering).
	rayBlind atomic.Bool
	mu       sync.Mutex
	nodeOf   map[string]string // container ID -> its raylet's node id
}

func newFakeLab(t *testing.T) *fakeLab {
	// Health checks of milliseconds: a stopped raylet's node is DEAD soon.
	cfg := raymodel.Config{HealthCheckPeriod: time.Millisecond}
	f := &fakeLab{t: t, eng: fake.New(), ray: raytest.NewModel(t, cfg, ""), s3: storetest.New(t), state: state.Dir(t.TempDir()),
		nodeOf: map[string]string{}}
	f.eng.HealthDelay = 30 * time.Millisecond
	f.eng.PublishFunc = f.publish
	project := "fakelab"
	o := plan.Options{Project: project, Bind: "127.0.0.1", DataVolume: project + "-food11", Images: map[service.Role]string{}, Ports: map[string]int{}}
	for _, r := range service.Roles() {
		o.Images[r] = "mltrain-test/standin-" + string(r) + ":1"
		f.eng.Images[o.Images[r]] = docker.Image{ID: "sha256:" + string(r), Tags: []string{o.Images[r]}}
	}
	names := []string{service.PortDashboard, service.PortGrafana, service.PortJupyter, service.PortMinIOConsole, service.PortMinIOAPI, service.PortPrometheus}
	for i, p := range portstest.FreePorts(t, len(names)) {
		o.Ports[names[i]] = p
	}
	f.opts = lifecycle.UpOptions{StateDir: f.state, Lab: o, Images: images.Options{Pull: images.PullNever},
		Timeout: 20 * time.Second, StopTimeout: time.Second}
	// The S3 double accepts one key: the lab's credentials carry it.
	require.NoError(t, f.state.Ensure())
	require.NoError(t, f.state.WriteJSON(state.CredentialsFile, plan.Credentials{
		MinIOAccessKey: storetest.AccessKey, MinIOSecretKey: storetest.SecretKey,
		GrafanaAdminPassword: "g", JupyterToken: "j", RayAuthToken: "r"}))
	return f
}

// syncRay brings Ray's nodes in step with the lab's containers, as their
// raylets do: the head's and each running worker's raylet registers at its
// container's address, once per start (a new raylet is a new node); one
// whose container stopped, or every one while rayBlind, stops answering.
func (f *fakeLab) syncRay() {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := context.Background()
	list, err := f.eng.ContainerList(ctx, map[string]string{labels.Project: f.opts.Lab.Project})
	require.NoError(f.t, err)
	running := map[string]docker.ContainerDetails{}
	for _, c := range list {
		d, err := f.eng.ContainerInspect(ctx, c.ID)
		require.NoError(f.t, err)
		head, worker := c.Labels[labels.Service] == service.HeadService, c.Labels[labels.Role] == labels.RoleWorker
		if d.Running && (head || worker) && !f.rayBlind.Load() {
			running[c.ID] = d
		}
	}
	for cid, id := range f.nodeOf {
		if _, ok := running[cid]; !ok { // stopped, removed, or blind
			f.ray.Silence(id, f.ray.Config().Now())
			delete(f.nodeOf, cid)
		}
	}
	for _, c := range list {
		d, ok := running[c.ID]
		if _, known := f.nodeOf[c.ID]; !ok || known {
			continue
		}
		n := raymodel.NodeSpec{Head: c.Labels[labels.Service] == service.HeadService, Total: raymodel.Resources{"CPU": 1}}
		for _, ip := range d.Networks {
			n.IP = ip
		}
		if !n.Head {
			n.Total["GPU"] = 1
		}
		f.nodeOf[c.ID] = f.ray.Join(n)
	}
}

func (f *fakeLab) deps(rep progress.Reporter) lifecycle.UpDeps {
	return lifecycle.UpDeps{Engine: f.eng, Reporter: rep, Detect: func(context.Context) (host.Facts, error) {
		return labtest.RehearsalFacts(), nil
	}}
}

func (f *fakeLab) up() (lifecycle.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return lifecycle.Up(ctx, f.deps(nil), f.opts)
}

// publish serves the double of the service behind a container port.
func (f *fakeLab) publish(_, hostIP string, hostPort, containerPort int) (io.Closer, error) {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	switch containerPort {
	case 8265:
		dash := proxyTo(f.t, f.ray.URL)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v0/nodes" {
				f.syncRay()
			}
			dash.ServeHTTP(w, r)
		})
	case 9090: // Prometheus: no Ray target scraped yet
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/targets" {
				_, _ = io.WriteString(w, `{"status":"success","data":{"activeTargets":[]}}`)
			}
		})
	case 9000:
		s3 := proxyTo(f.t, f.s3.URL)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/minio/health/ready" {
				w.WriteHeader(http.StatusOK)
				return
			}
			s3.ServeHTTP(w, r)
		})
	}
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP, strconv.Itoa(hostPort)))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	f.t.Cleanup(func() { srv.Close() })
	return srv, nil
}

func proxyTo(t *testing.T, target string) http.Handler {
	u, err := url.Parse(target)
	require.NoError(t, err)
	return httputil.NewSingleHostReverseProxy(u)
}

// containers maps service -> container ID of the lab's containers.
func (f *fakeLab) containers() map[string]string {
	out := map[string]string{}
	for _, c := range f.eng.Containers {
		if c.Labels[labels.Project] == f.opts.Lab.Project {
			out[c.Labels[labels.Service]] = c.ID
		}
	}
	return out
}

// labCreates are the lab's container creations (the dataset check's helper
// containers are not the lab's).
func (f *fakeLab) labCreates() []string {
	var out []string
	for _, c := range f.eng.CallsOf("create") {
		if strings.HasPrefix(c, f.opts.Lab.Project+"-") {
			out = append(out, c)
		}
	}
	return out
}

var errStart = errors.New("OCI runtime create failed: fake failure")

func failStartOf(name string) func(string) error {
	return func(n string) error {
		if n == name {
			return fmt.Errorf("start %s: %w", n, errStart)
		}
		return nil
	}
}
