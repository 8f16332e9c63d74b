package docker

import (
	"context"
	"fmt"
	"sort"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// IsConflict reports whether err says the object exists already or is in use.
func IsConflict(err error) bool { return cerrdefs.IsConflict(err) }

// ErrNotFound and ErrConflict are what fakes wrap; IsNotFound and
// IsConflict (and errors.Is) recognise them as they do the engine's errors.
var (
	ErrNotFound = cerrdefs.ErrNotFound
	ErrConflict = cerrdefs.ErrConflict
)

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

var _ Engine = (*SDK)(nil)
