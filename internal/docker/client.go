package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// IsConflict reports whether err says the object exists already or is in use.
func IsConflict(err error) bool { return cerrdefs.IsConflict(err) }

// ErrNotFound is returned by fakes; IsNotFound recognises it.
var ErrNotFound = cerrdefs.ErrNotFound

// SDK is the Engine backed by the moby client.
type SDK struct {
	c    *client.Client
	host string
}

// Connect opens the engine the way the docker CLI would: DOCKER_HOST, else
// the current docker context, else the default socket. It pings the engine so
// an unreachable daemon is reported here, with the address tried.
func Connect(ctx context.Context) (*SDK, error) {
	host, err := ResolveHost()
	if err != nil {
		return nil, err
	}
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", host, err)
	}
	s := &SDK{c: c, host: c.DaemonHost()}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		c.Close()
		return nil, &UnreachableError{Host: s.host, Err: err}
	}
	return s, nil
}

// UnreachableError says the engine did not answer.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("docker engine at %s is not reachable: %v", e.Host, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

func (s *SDK) Host() string { return s.host }
func (s *SDK) Close() error { return s.c.Close() }

func (s *SDK) Info(ctx context.Context) (Info, error) {
	r, err := s.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return Info{}, fmt.Errorf("docker info from %s: %w", s.host, err)
	}
	in := r.Info
	out := Info{
		ServerVersion: in.ServerVersion, OS: in.OperatingSystem, Architecture: in.Architecture,
		NCPU: in.NCPU, MemTotal: in.MemTotal, DockerRootDir: in.DockerRootDir,
		DefaultRuntime: in.DefaultRuntime, CDISpecDirs: in.CDISpecDirs,
		APIVersion: s.c.ClientVersion(),
	}
	for name := range in.Runtimes {
		out.Runtimes = append(out.Runtimes, name)
	}
	sort.Strings(out.Runtimes)
	for _, d := range in.DiscoveredDevices {
		if d.Source == "cdi" || d.Source == "" {
			out.CDIDevices = append(out.CDIDevices, d.ID)
		}
	}
	return out, nil
}

func (s *SDK) ImageInspect(ctx context.Context, ref string) (Image, error) {
	r, err := s.c.ImageInspect(ctx, ref)
	if err != nil {
		return Image{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	img := Image{ID: r.ID, Tags: r.RepoTags, Size: r.Size, Created: r.Created}
	if r.Config != nil {
		img.Labels = r.Config.Labels
	}
	return img, nil
}

func (s *SDK) ImageBuild(ctx context.Context, o BuildOptions) (string, error) {
	args := map[string]*string{}
	for k, v := range o.BuildArgs {
		v := v
		args[k] = &v
	}
	df := o.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	r, err := s.c.ImageBuild(ctx, o.Context, client.ImageBuildOptions{
		Tags: o.Tags, Labels: o.Labels, BuildArgs: args, Dockerfile: df,
		NoCache: o.NoCache, PullParent: o.Pull, Remove: true, ForceRemove: true,
	})
	if err != nil {
		return "", fmt.Errorf("build %s: %w", strings.Join(o.Tags, ","), err)
	}
	defer r.Body.Close()
	var id string
	var tail []string // last lines, so a failed step shows its output
	err = readJSONStream(r.Body, func(m jsonstream.Message) error {
		if m.Error != nil {
			return &BuildError{Tags: o.Tags, Message: m.Error.Message, Tail: tail}
		}
		if m.Aux != nil {
			var aux struct{ ID string }
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.ID != "" {
				id = aux.ID
			}
		}
		for _, line := range strings.Split(strings.TrimRight(m.Stream, "\n"), "\n") {
			if line == "" {
				continue
			}
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			if o.OnLine != nil {
				o.OnLine(line)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// BuildError is a failed Dockerfile step with the output that led to it.
type BuildError struct {
	Tags    []string
	Message string
	Tail    []string
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("build %s failed: %s", strings.Join(e.Tags, ","), e.Message)
	if len(e.Tail) > 0 {
		msg += "\n  last build output:\n    " + strings.Join(e.Tail, "\n    ")
	}
	return msg
}

func (s *SDK) ImagePull(ctx context.Context, ref string, onProgress func(PullProgress)) error {
	r, err := s.c.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer r.Close()
	return readJSONStream(r, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("pull %s: %s", ref, m.Error.Message)
		}
		if onProgress != nil {
			p := PullProgress{Layer: m.ID, Status: m.Status}
			if m.Progress != nil {
				p.Current, p.Total = m.Progress.Current, m.Progress.Total
			}
			onProgress(p)
		}
		return nil
	})
}

func readJSONStream(r io.Reader, fn func(jsonstream.Message) error) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read engine progress stream: %w", err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

func (s *SDK) ImageSave(ctx context.Context, refs []string, w io.Writer) error {
	r, err := s.c.ImageSave(ctx, refs)
	if err != nil {
		return fmt.Errorf("save images %s: %w", strings.Join(refs, ","), err)
	}
	defer r.Close()
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("save images %s: %w", strings.Join(refs, ","), err)
	}
	return nil
}

func (s *SDK) ImageLoad(ctx context.Context, in io.Reader) ([]string, error) {
	r, err := s.c.ImageLoad(ctx, in, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	defer r.Close()
	var loaded []string
	err = readJSONStream(r, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("load images: %s", m.Error.Message)
		}
		for _, p := range []string{"Loaded image: ", "Loaded image ID: "} {
			if strings.HasPrefix(m.Stream, p) {
				loaded = append(loaded, strings.TrimSpace(strings.TrimPrefix(m.Stream, p)))
			}
		}
		return nil
	})
	return loaded, err
}

func (s *SDK) ImageImport(ctx context.Context, r io.Reader, ref string, changes []string) error {
	res, err := s.c.ImageImport(ctx, client.ImageImportSource{Source: r, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import image %s: %w", ref, err)
	}
	defer res.Close()
	return readJSONStream(res, func(m jsonstream.Message) error {
		if m.Error != nil {
			return fmt.Errorf("import image %s: %s", ref, m.Error.Message)
		}
		return nil
	})
}

func (s *SDK) ImageRemove(ctx context.Context, ref string) error {
	if _, err := s.c.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

func (s *SDK) NetworkEnsure(ctx context.Context, name string, labels map[string]string) (bool, error) {
	if _, err := s.c.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		return false, nil
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("inspect network %s: %w", name, err)
	}
	if _, err := s.c.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		if IsConflict(err) { // created concurrently by another mltrain
			return false, nil
		}
		return false, fmt.Errorf("create network %s: %w", name, err)
	}
	return true, nil
}

func (s *SDK) NetworkList(ctx context.Context, labels map[string]string) ([]string, error) {
	r, err := s.c.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var out []string
	for _, n := range r.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, nil
}

func (s *SDK) NetworkRemove(ctx context.Context, name string) error {
	if _, err := s.c.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	return nil
}

func (s *SDK) VolumeEnsure(ctx context.Context, name string, labels map[string]string) (bool, error) {
	if _, err := s.c.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return false, nil
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	if _, err := s.c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels}); err != nil {
		return false, fmt.Errorf("create volume %s: %w", name, err)
	}
	return true, nil
}

func (s *SDK) VolumeInspect(ctx context.Context, name string) (Volume, error) {
	r, err := s.c.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		return Volume{}, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	v := r.Volume
	return Volume{Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint, CreatedAt: v.CreatedAt}, nil
}

func (s *SDK) VolumeList(ctx context.Context, labels map[string]string) ([]Volume, error) {
	r, err := s.c.VolumeList(ctx, client.VolumeListOptions{Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var out []Volume
	for _, v := range r.Items {
		out = append(out, Volume{Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint, CreatedAt: v.CreatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *SDK) VolumeRemove(ctx context.Context, name string) error {
	if _, err := s.c.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}

func labelFilters(labels map[string]string) client.Filters {
	f := client.Filters{}
	for k, v := range labels {
		if v == "" {
			f.Add("label", k)
		} else {
			f.Add("label", k+"="+v)
		}
	}
	return f
}

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
		Container:  Container{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/")},
		Networks:   map[string]string{},
		Config:     c.Config,
		HostConfig: c.HostConfig,
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

var _ Engine = (*SDK)(nil)
