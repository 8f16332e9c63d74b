// Package fake is an in-memory docker.Engine for unit tests of failure
// branches the real engine cannot be made to produce on demand.
// Hooks (ExecFunc, StartFunc, ...) let a test script the engine's answers.
package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
func (f *Engine) Host() string                              { return "fake://engine" }
func (f *Engine) Close() error                              { return nil }

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

func (f *Engine) NetworkList(_ context.Context, labels map[string]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, l := range f.Networks {
		if matches(l, labels) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (f *Engine) NetworkRemove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("network-remove", name)
	delete(f.Networks, name)
	return nil
}

func (f *Engine) VolumeEnsure(_ context.Context, name string, labels map[string]string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.Volumes[name]; ok {
		return false, nil
	}
	f.call("volume-create", name)
	f.Volumes[name] = docker.Volume{Name: name, Labels: labels}
	return true, nil
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

func (f *Engine) VolumeRemove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call("volume-remove", name)
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

// AddContainer puts a container in the fake as if it had been created.
func (f *Engine) AddContainer(d docker.ContainerDetails) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.ID == "" {
		f.seq++
		d.ID = fmt.Sprintf("%064d", f.seq)
	}
	if d.Networks == nil {
		d.Networks = map[string]string{}
	}
	f.Containers[d.Name] = &d
}

func (f *Engine) find(nameOrID string) (*docker.ContainerDetails, bool) {
	if c, ok := f.Containers[nameOrID]; ok {
		return c, true
	}
	for _, c := range f.Containers {
		if c.ID == nameOrID || (len(nameOrID) >= 12 && strings.HasPrefix(c.ID, nameOrID)) {
			return c, true
		}
	}
	return nil, false
}

func (f *Engine) ContainerList(_ context.Context, labels map[string]string) ([]docker.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []docker.Container
	for _, c := range f.Containers {
		if matches(c.Labels, labels) {
			out = append(out, c.Container)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *Engine) ContainerInspect(_ context.Context, nameOrID string) (docker.ContainerDetails, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return docker.ContainerDetails{}, notFound("container", nameOrID)
	}
	return *c, nil
}

func (f *Engine) ContainerCreate(_ context.Context, spec docker.ContainerSpec) (string, error) {
	f.mu.Lock()
	if _, ok := f.Containers[spec.Name]; ok {
		f.mu.Unlock()
		return "", fmt.Errorf("create container %s: name in use", spec.Name)
	}
	f.call("create", spec.Name)
	f.mu.Unlock()
	d := docker.ContainerDetails{Config: spec.Config, HostConfig: spec.HostConfig}
	d.Name, d.State, d.Created = spec.Name, "created", time.Now()
	if spec.Config != nil {
		d.Image, d.Labels, d.Env = spec.Config.Image, spec.Config.Labels, spec.Config.Env
	}
	f.AddContainer(d)
	c, _ := f.ContainerInspect(context.Background(), spec.Name)
	return c.ID, nil
}

func (f *Engine) ContainerStart(_ context.Context, nameOrID string) error {
	f.mu.Lock()
	c, ok := f.find(nameOrID)
	if !ok {
		f.mu.Unlock()
		return notFound("container", nameOrID)
	}
	f.call("start", c.Name)
	hook := f.StartFunc
	name := c.Name
	f.mu.Unlock()
	if hook != nil {
		if err := hook(name); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.State, c.Running, c.StartedAt = "running", true, time.Now()
	return nil
}

func (f *Engine) ContainerStop(_ context.Context, nameOrID string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return nil
	}
	f.call("stop", c.Name)
	c.State, c.Running, c.FinishedAt = "exited", false, time.Now()
	return nil
}

func (f *Engine) ContainerRemove(_ context.Context, nameOrID string, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return nil
	}
	f.call("remove", c.Name)
	delete(f.Containers, c.Name)
	return nil
}

func (f *Engine) ContainerLogs(_ context.Context, nameOrID string, _ docker.LogsOptions, stdout, _ io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return notFound("container", nameOrID)
	}
	_, err := io.WriteString(stdout, f.Logs[c.Name])
	return err
}

func (f *Engine) CopyToContainer(_ context.Context, nameOrID, dst string, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Copied[nameOrID+":"+dst] = b
	return nil
}

func (f *Engine) CopyFromContainer(_ context.Context, nameOrID, src string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.Copied[nameOrID+":"+src]
	if !ok {
		return nil, notFound("path", nameOrID+":"+src)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (f *Engine) Exec(_ context.Context, nameOrID string, cmd []string) (docker.ExecResult, error) {
	f.mu.Lock()
	c, ok := f.find(nameOrID)
	hook := f.ExecFunc
	f.mu.Unlock()
	if !ok {
		return docker.ExecResult{}, notFound("container", nameOrID)
	}
	if hook == nil {
		return docker.ExecResult{ExitCode: 127, Stderr: "fake: no ExecFunc"}, nil
	}
	return hook(c.Name, cmd)
}

var _ docker.Engine = (*Engine)(nil)
