package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/mltrain/mltrain/internal/docker"
)

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
	if at, ok := f.healthyAt[c.Name]; ok && c.Running && c.Health == "starting" && !time.Now().Before(at) {
		c.Health = "healthy"
		delete(f.healthyAt, c.Name)
	}
	d := *c
	d.Networks = maps.Clone(c.Networks)
	return d, nil
}

// ContainerCreate does what the engine's create does: the image must be
// there (the engine pulls nothing at create), a name in use is a conflict,
// the container carries its image's labels under its own, is on its
// networks without an address, and named volumes it mounts are created.
func (f *Engine) ContainerCreate(_ context.Context, spec docker.ContainerSpec) (string, error) {
	f.mu.Lock()
	ref := ""
	if spec.Config != nil {
		ref = spec.Config.Image
	}
	img, ok := f.image(ref)
	if !ok {
		f.mu.Unlock()
		return "", fmt.Errorf("create container %s: No such image: %s: %w", spec.Name, ref, docker.ErrNotFound)
	}
	if c, ok := f.Containers[spec.Name]; ok {
		f.mu.Unlock()
		return "", fmt.Errorf("create container %s: the container name %q is already in use by container %q: %w", spec.Name, "/"+spec.Name, c.ID, docker.ErrConflict)
	}
	f.call("create", spec.Name)
	f.createVolumes(spec)
	f.mu.Unlock()
	cfg := *spec.Config // the engine keeps its own copy, with the image's labels merged in
	cfg.Labels = maps.Clone(img.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, spec.Config.Labels)
	d := docker.ContainerDetails{Config: &cfg, HostConfig: spec.HostConfig, Networks: map[string]string{}}
	d.Name, d.State, d.Created = spec.Name, "created", time.Now()
	d.Image, d.Labels, d.Env = cfg.Image, cfg.Labels, cfg.Env
	for _, n := range networksOf(&d, spec) {
		d.Networks[n] = ""
	}
	f.AddContainer(d)
	c, _ := f.ContainerInspect(context.Background(), spec.Name)
	return c.ID, nil
}

// image finds ref as the engine resolves it: a tag ("name" meaning
// "name:latest") or an image ID; call with f.mu held.
func (f *Engine) image(ref string) (docker.Image, bool) {
	if ref == "" {
		return docker.Image{}, false
	}
	if img, ok := f.Images[ref]; ok {
		return img, true
	}
	if i := strings.LastIndex(ref, ":"); i < 0 || strings.Contains(ref[i:], "/") {
		if img, ok := f.Images[ref+":latest"]; ok {
			return img, true
		}
	}
	for _, img := range f.Images {
		if img.ID != "" && (img.ID == ref || strings.TrimPrefix(img.ID, "sha256:") == ref) {
			return img, true
		}
	}
	return docker.Image{}, false
}

// createVolumes creates the named volumes spec mounts that do not exist,
// unlabelled, as the engine does; call with f.mu held.
func (f *Engine) createVolumes(spec docker.ContainerSpec) {
	for _, v := range volumesOf(spec.HostConfig) {
		if _, ok := f.Volumes[v]; !ok {
			f.Volumes[v] = f.newVolume(v, nil)
		}
	}
}

// volumesOf lists the named volumes a container mounts.
func volumesOf(hc *container.HostConfig) []string {
	if hc == nil {
		return nil
	}
	var out []string
	for _, m := range hc.Mounts {
		if m.Type == mount.TypeVolume && m.Source != "" {
			out = append(out, m.Source)
		}
	}
	for _, b := range hc.Binds { // "name:/path[:opts]"; a source path is a bind mount
		if src, _, ok := strings.Cut(b, ":"); ok && src != "" && !strings.HasPrefix(src, "/") {
			out = append(out, src)
		}
	}
	return out
}

func (f *Engine) ContainerStart(_ context.Context, nameOrID string) error {
	f.mu.Lock()
	c, ok := f.find(nameOrID)
	if !ok {
		f.mu.Unlock()
		return notFound("container", nameOrID)
	}
	f.call("start", c.Name)
	if c.Running { // the engine answers "not modified" and changes nothing
		f.mu.Unlock()
		return nil
	}
	hook := f.StartFunc
	name := c.Name
	f.mu.Unlock()
	if hook != nil {
		if err := hook(name); err != nil {
			return err
		}
	}
	if err := f.publish(c); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.State, c.Running, c.StartedAt, c.ExitCode = "running", true, time.Now(), 0
	c.Health = ""
	if hasHealthcheck(c) {
		c.Health = "starting"
		if f.healthyAt == nil {
			f.healthyAt = map[string]time.Time{}
		}
		f.healthyAt[c.Name] = c.StartedAt.Add(f.HealthDelay)
	}
	f.seq++
	if len(c.Networks) == 0 { // put in by AddContainer without networks
		for _, n := range networksOf(c, docker.ContainerSpec{}) {
			c.Networks[n] = ""
		}
	}
	for n := range c.Networks {
		c.Networks[n] = fmt.Sprintf("172.18.%d.%d", f.seq/250, f.seq%250+2)
	}
	return nil
}

// publish binds the container's port bindings through PublishFunc and
// records them as the engine lists them.
func (f *Engine) publish(c *docker.ContainerDetails) error {
	if c.HostConfig == nil {
		return nil
	}
	var ports []docker.Port
	var bound []io.Closer
	for cp, bindings := range c.HostConfig.PortBindings {
		for _, b := range bindings {
			hp, _ := strconv.Atoi(b.HostPort)
			ip := ""
			if b.HostIP.IsValid() {
				ip = b.HostIP.String()
			}
			if f.PublishFunc != nil {
				cl, err := f.PublishFunc(c.Name, ip, hp, int(cp.Num()))
				if err != nil {
					for _, b := range bound {
						b.Close()
					}
					return fmt.Errorf("start %s: Bind for %s:%d failed: port is already allocated: %w", c.Name, ip, hp, err)
				}
				bound = append(bound, cl)
			}
			ports = append(ports, docker.Port{HostIP: ip, HostPort: hp, ContainerPort: int(cp.Num())})
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.published == nil {
		f.published = map[string][]io.Closer{}
	}
	f.published[c.Name] = bound
	c.Ports = ports
	return nil
}

// unpublish closes what publish bound for name; call with f.mu held.
func (f *Engine) unpublish(name string) {
	for _, cl := range f.published[name] {
		cl.Close()
	}
	delete(f.published, name)
}

func hasHealthcheck(c *docker.ContainerDetails) bool {
	hc := c.Config != nil && c.Config.Healthcheck != nil && len(c.Config.Healthcheck.Test) > 0
	return hc && c.Config.Healthcheck.Test[0] != "NONE"
}

// networksOf is the networks a container of spec is on: its network mode's
// and those of its endpoint settings, else the default bridge.
func networksOf(c *docker.ContainerDetails, spec docker.ContainerSpec) []string {
	var out []string
	if c.HostConfig != nil && c.HostConfig.NetworkMode != "" && !c.HostConfig.NetworkMode.IsDefault() {
		out = append(out, string(c.HostConfig.NetworkMode))
	}
	if spec.Networking != nil {
		for n := range spec.Networking.EndpointsConfig {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "bridge")
	}
	return out
}

func (f *Engine) ContainerStop(_ context.Context, nameOrID string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return nil
	}
	f.call("stop", c.Name)
	if c.Running {
		c.State, c.Running, c.FinishedAt, c.Health, c.ExitCode = "exited", false, time.Now(), "", 0
		for n := range c.Networks { // it stays on its networks, its addresses released
			c.Networks[n] = ""
		}
	}
	f.unpublish(c.Name)
	return nil
}

func (f *Engine) ContainerRemove(_ context.Context, nameOrID string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.find(nameOrID)
	if !ok {
		return nil
	}
	f.call("remove", c.Name)
	if c.Running && !force {
		return fmt.Errorf("remove container %s: You cannot remove a running container %s. Stop the container before attempting removal or force remove: %w",
			nameOrID, c.ID, docker.ErrConflict)
	}
	f.unpublish(c.Name)
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
	if _, ok := f.find(nameOrID); !ok {
		return notFound("container", nameOrID)
	}
	f.Copied[nameOrID+":"+dst] = b
	return nil
}

func (f *Engine) CopyFromContainer(_ context.Context, nameOrID, src string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.find(nameOrID); !ok {
		return nil, notFound("container", nameOrID)
	}
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
	var running bool
	var id string
	if ok {
		running, id = c.Running, c.ID
	}
	f.mu.Unlock()
	if !ok {
		return docker.ExecResult{}, notFound("container", nameOrID)
	}
	if !running {
		return docker.ExecResult{}, fmt.Errorf("exec %q in container %s: Container %s is not running: %w", strings.Join(cmd, " "), nameOrID, id, docker.ErrConflict)
	}
	if hook == nil {
		return docker.ExecResult{ExitCode: 127, Stderr: "fake: no ExecFunc"}, nil
	}
	return hook(c.Name, cmd)
}
