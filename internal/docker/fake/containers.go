package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

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
	for _, n := range networksOf(c) {
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

func networksOf(c *docker.ContainerDetails) []string {
	var out []string
	if c.HostConfig != nil && c.HostConfig.NetworkMode != "" && !c.HostConfig.NetworkMode.IsDefault() {
		out = append(out, string(c.HostConfig.NetworkMode))
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
	}
	f.unpublish(c.Name)
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
