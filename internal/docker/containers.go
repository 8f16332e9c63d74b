package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

func (s *SDK) ContainerList(ctx context.Context, labels map[string]string) ([]Container, error) {
	r, err := s.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var out []Container
	for _, c := range r.Items {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		ct := Container{
			ID: c.ID, Name: name, Image: c.Image, State: string(c.State), Status: c.Status,
			Labels: c.Labels, Created: time.Unix(c.Created, 0),
		}
		for _, p := range c.Ports {
			if p.PublicPort == 0 {
				continue
			}
			ct.Ports = append(ct.Ports, Port{HostIP: addrString(p.IP), HostPort: int(p.PublicPort), ContainerPort: int(p.PrivatePort), Proto: p.Type})
		}
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *SDK) ContainerInspect(ctx context.Context, id string) (ContainerDetails, error) {
	r, err := s.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return ContainerDetails{}, fmt.Errorf("inspect container %s: %w", id, err)
	}
	c := r.Container
	d := ContainerDetails{
		Container:    Container{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/")},
		RestartCount: c.RestartCount,
		Networks:     map[string]string{},
		Config:       c.Config,
		HostConfig:   c.HostConfig,
	}
	if c.Config != nil {
		d.Image, d.Labels, d.Env = c.Config.Image, c.Config.Labels, c.Config.Env
	}
	if t, err := time.Parse(time.RFC3339Nano, c.Created); err == nil {
		d.Created = t
	}
	if st := c.State; st != nil {
		d.State, d.Running, d.ExitCode, d.OOMKilled, d.Error = string(st.Status), st.Running, st.ExitCode, st.OOMKilled, st.Error
		d.StartedAt, _ = time.Parse(time.RFC3339Nano, st.StartedAt)
		d.FinishedAt, _ = time.Parse(time.RFC3339Nano, st.FinishedAt)
		if st.Health != nil {
			d.Health = string(st.Health.Status)
		}
	}
	if c.NetworkSettings != nil {
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				d.Networks[name] = addrString(ep.IPAddress)
			}
		}
	}
	return d, nil
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func (s *SDK) ContainerCreate(ctx context.Context, spec ContainerSpec) (string, error) {
	r, err := s.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: spec.Name, Config: spec.Config, HostConfig: spec.HostConfig, NetworkingConfig: spec.Networking,
	})
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", spec.Name, err)
	}
	return r.ID, nil
}

func (s *SDK) ContainerStart(ctx context.Context, id string) error {
	if _, err := s.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	return nil
}

func (s *SDK) ContainerStop(ctx context.Context, id string, timeout time.Duration) error {
	secs := int(timeout.Seconds())
	if _, err := s.c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

func (s *SDK) ContainerRemove(ctx context.Context, id string, force bool) error {
	if _, err := s.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: force}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

func (s *SDK) ContainerLogs(ctx context.Context, id string, o LogsOptions, stdout, stderr io.Writer) error {
	tail := o.Tail
	if tail == "" {
		tail = "all"
	}
	r, err := s.c.ContainerLogs(ctx, id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: o.Follow, Tail: tail, Timestamps: o.Timestamps, Since: o.Since,
	})
	if err != nil {
		return fmt.Errorf("logs of container %s: %w", id, err)
	}
	defer r.Close()
	tty := false
	if d, err := s.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && d.Container.Config != nil {
		tty = d.Container.Config.Tty
	}
	if tty {
		_, err = io.Copy(stdout, r)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, r)
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("logs of container %s: %w", id, err)
	}
	return nil
}

func (s *SDK) CopyToContainer(ctx context.Context, id, dst string, tarStream io.Reader) error {
	if _, err := s.c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dst, Content: tarStream}); err != nil {
		return fmt.Errorf("copy into container %s:%s: %w", id, dst, err)
	}
	return nil
}

func (s *SDK) CopyFromContainer(ctx context.Context, id, src string) (io.ReadCloser, error) {
	r, err := s.c.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: src})
	if err != nil {
		return nil, fmt.Errorf("copy from container %s:%s: %w", id, src, err)
	}
	return r.Content, nil
}

func (s *SDK) Exec(ctx context.Context, id string, cmd []string) (ExecResult, error) {
	what := fmt.Sprintf("exec %q in container %s", strings.Join(cmd, " "), id)
	cr, err := s.c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	att, err := s.c.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	defer att.Close()
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, att.Reader); err != nil {
		return ExecResult{}, fmt.Errorf("%s: read output: %w", what, err)
	}
	ins, err := s.c.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	return ExecResult{ExitCode: ins.ExitCode, Stdout: out.String(), Stderr: errb.String()}, nil
}
