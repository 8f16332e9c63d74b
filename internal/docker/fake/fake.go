// Package fake is an in-memory docker.Engine for unit tests of failure
// branches the real engine cannot be made to produce on demand.
// Hooks (ExecFunc, StartFunc, ...) let a test script the engine's answers.
package fake

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
)

// Engine is the fake. The zero value is not usable: call New.
type Engine struct {
	mu         sync.Mutex
	InfoValue  docker.Info
	InfoErr    error
	Images     map[string]docker.Image
	Volumes    map[string]docker.Volume
	Networks   map[string]map[string]string
	Containers map[string]*docker.ContainerDetails // by name
	Logs       map[string]string                   // by container name
	Copied     map[string][]byte                   // "name:dst" -> tar bytes

	// Hooks; nil means the default behaviour.
	ExecFunc  func(name string, cmd []string) (docker.ExecResult, error)
	StartFunc func(name string) error
	PullFunc  func(ref string) error
	// PublishFunc binds a published host port of a starting container, as
	// the engine's proxy does (nil: ports are recorded, nothing binds). Its
	// error fails the start the way the engine's does; the closer runs when
	// the container stops.
	PublishFunc func(name, hostIP string, hostPort, containerPort int) (io.Closer, error)
	// HealthDelay is how long a started container with a healthcheck stays
	// "starting" before it reports "healthy", as the engine does for its
	// first interval.
	HealthDelay time.Duration

	published map[string][]io.Closer // container name -> bound ports
	healthyAt map[string]time.Time   // containers this fake started with a healthcheck

	Calls []string // "verb name", in order
	seq   int
}

// New returns an empty fake engine.
func New() *Engine {
	return &Engine{
		InfoValue: docker.Info{ServerVersion: "fake", Runtimes: []string{"runc"}, DockerRootDir: "/var/lib/docker", NCPU: 8, MemTotal: 32 << 30},
		Images:    map[string]docker.Image{}, Volumes: map[string]docker.Volume{}, Networks: map[string]map[string]string{},
		Containers: map[string]*docker.ContainerDetails{}, Logs: map[string]string{}, Copied: map[string][]byte{},
	}
}

func (f *Engine) call(verb, name string) {
	f.Calls = append(f.Calls, verb+" "+name)
}

// CallsOf returns the recorded calls of one verb.
func (f *Engine) CallsOf(verb string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.Calls {
		if strings.HasPrefix(c, verb+" ") {
			out = append(out, strings.TrimPrefix(c, verb+" "))
		}
	}
	return out
}

func notFound(kind, name string) error {
	return fmt.Errorf("%s %s: %w", kind, name, docker.ErrNotFound)
}

func (f *Engine) Info(context.Context) (docker.Info, error) { return f.InfoValue, f.InfoErr }

func (f *Engine) Host() string { return "fake://engine" }

func (f *Engine) Close() error { return nil }

func (f *Engine) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if img, ok := f.Images[ref]; ok {
		return img, nil
	}
	return docker.Image{}, notFound("image", ref)
}

func (f *Engine) ImageBuild(_ context.Context, o docker.BuildOptions) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	id := fmt.Sprintf("sha256:%064d", f.seq)
	for _, t := range o.Tags {
		f.call("build", t)
		f.Images[t] = docker.Image{ID: id, Tags: []string{t}, Labels: o.Labels}
	}
	return id, nil
}

func (f *Engine) ImagePull(_ context.Context, ref string, _ func(docker.PullProgress)) error {
	f.mu.Lock()
	f.call("pull", ref)
	hook := f.PullFunc
	f.mu.Unlock()
	if hook != nil {
		if err := hook(ref); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Images[ref] = docker.Image{ID: "sha256:" + ref, Tags: []string{ref}}
	return nil
}

func (f *Engine) ImageSave(_ context.Context, refs []string, w io.Writer) error {
	_, err := io.WriteString(w, strings.Join(refs, "\n"))
	return err
}

func (f *Engine) ImageLoad(_ context.Context, r io.Reader) ([]string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	refs := strings.Split(string(b), "\n")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ref := range refs {
		f.Images[ref] = docker.Image{ID: "sha256:" + ref, Tags: []string{ref}}
	}
	return refs, nil
}

func (f *Engine) ImageImport(_ context.Context, _ io.Reader, ref string, _ []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("import", ref)
	f.Images[ref] = docker.Image{ID: "sha256:" + ref, Tags: []string{ref}}
	return nil
}

func (f *Engine) ImageRemove(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.Images, ref)
	return nil
}

func (f *Engine) NetworkEnsure(_ context.Context, name string, labels map[string]string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.Networks[name]; ok {
		return false, nil
	}
	f.call("network-create", name)
	f.Networks[name] = labels
	return true, nil
}

// NetworkList: the fake keeps one network per name, its ID the name.
func (f *Engine) NetworkList(_ context.Context, name string, labels map[string]string) ([]docker.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []docker.Network
	for n, l := range f.Networks {
		if (name == "" || n == name) && matches(l, labels) {
			out = append(out, docker.Network{ID: n, Name: n, Labels: l, Containers: f.attached(n)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// NetworkRemove refuses a network with running containers on it, as the
// engine does (their endpoints are "active"); a stopped one is no obstacle.
func (f *Engine) NetworkRemove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("network-remove", name)
	if _, ok := f.Networks[name]; ok && len(f.attached(name)) > 0 {
		return fmt.Errorf("remove network %s: error while removing network: network %s has active endpoints (%s)",
			name, name, strings.Join(f.attached(name), ", "))
	}
	delete(f.Networks, name)
	return nil
}

// attached names the running containers on network name, sorted: only a
// running container has an endpoint there; call with f.mu held.
func (f *Engine) attached(name string) []string {
	var out []string
	for _, c := range f.Containers {
		if _, on := c.Networks[name]; on && c.Running {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (f *Engine) VolumeEnsure(_ context.Context, name string, labels map[string]string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.Volumes[name]; ok {
		return false, nil
	}
	f.call("volume-create", name)
	f.Volumes[name] = f.newVolume(name, labels)
	return true, nil
}

// newVolume is a volume of the engine's local driver, as it reports one.
func (f *Engine) newVolume(name string, labels map[string]string) docker.Volume {
	return docker.Volume{
		Name: name, Labels: labels, Driver: "local",
		Mountpoint: path.Join(f.InfoValue.DockerRootDir, "volumes", name, "_data"),
		CreatedAt:  time.Now().UTC().Format(time.RFC3339),
	}
}

func (f *Engine) VolumeInspect(_ context.Context, name string) (docker.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.Volumes[name]; ok {
		return v, nil
	}
	return docker.Volume{}, notFound("volume", name)
}

func (f *Engine) VolumeList(_ context.Context, labels map[string]string) ([]docker.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []docker.Volume
	for _, v := range f.Volumes {
		if matches(v.Labels, labels) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// VolumeRemove refuses a volume any container mounts, running or not, with
// the engine's conflict.
func (f *Engine) VolumeRemove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("volume-remove", name)
	if _, ok := f.Volumes[name]; !ok {
		return nil
	}
	var users []string
	for _, c := range f.Containers {
		if slices.Contains(volumesOf(c.HostConfig), name) {
			users = append(users, c.ID)
		}
	}
	if len(users) > 0 {
		sort.Strings(users)
		return fmt.Errorf("remove volume %s: volume is in use - [%s]: %w", name, strings.Join(users, ", "), docker.ErrConflict)
	}
	delete(f.Volumes, name)
	return nil
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		hv, ok := have[k]
		if !ok || (v != "" && hv != v) {
			return false
		}
	}
	return true
}

var _ docker.Engine = (*Engine)(nil)
