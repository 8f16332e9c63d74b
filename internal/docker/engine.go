// Package docker is the one narrow interface over the Docker Engine API that
// the rest of mltrain uses (k3d-style): commands and packages depend on Engine,
// tests substitute fakes, and only client.go talks to the moby SDK.
package docker

import (
	"context"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Engine is everything mltrain asks of Docker. Keep it small: add a method only
// when a feature needs it, and implement it in client.go and in the fakes.
type Engine interface {
	// Info describes the engine: version, GPU plumbing, storage root.
	Info(ctx context.Context) (Info, error)
	// Host is the engine address in use (unix socket, tcp URL), for messages.
	Host() string

	ImageInspect(ctx context.Context, ref string) (Image, error) // IsNotFound when absent
	ImageBuild(ctx context.Context, opts BuildOptions) (string, error)
	ImagePull(ctx context.Context, ref string, onProgress func(PullProgress)) error
	ImageSave(ctx context.Context, refs []string, w io.Writer) error
	ImageLoad(ctx context.Context, r io.Reader) ([]string, error)
	ImageImport(ctx context.Context, r io.Reader, ref string, changes []string) error
	ImageRemove(ctx context.Context, ref string) error

	NetworkEnsure(ctx context.Context, name string, labels map[string]string) (created bool, err error)
	NetworkRemove(ctx context.Context, nameOrID string) error // nil when already gone
	// NetworkList lists the networks named name (exactly; any name when
	// empty) carrying every given label, oldest first. Docker allows two
	// networks of one name: only their IDs tell them apart.
	NetworkList(ctx context.Context, name string, labels map[string]string) ([]Network, error)

	VolumeEnsure(ctx context.Context, name string, labels map[string]string) (created bool, err error)
	VolumeInspect(ctx context.Context, name string) (Volume, error) // IsNotFound when absent
	VolumeList(ctx context.Context, labels map[string]string) ([]Volume, error)
	VolumeRemove(ctx context.Context, name string) error // nil when already gone

	// ContainerList lists containers (running or not) carrying every given label.
	ContainerList(ctx context.Context, labels map[string]string) ([]Container, error)
	ContainerInspect(ctx context.Context, nameOrID string) (ContainerDetails, error)
	ContainerCreate(ctx context.Context, spec ContainerSpec) (string, error)
	ContainerStart(ctx context.Context, nameOrID string) error
	// ContainerStop sends the image's stop signal, then SIGKILL after timeout.
	ContainerStop(ctx context.Context, nameOrID string, timeout time.Duration) error
	ContainerRemove(ctx context.Context, nameOrID string, force bool) error // nil when already gone
	// ContainerLogs writes the demultiplexed output; tail is "all" or a line count.
	ContainerLogs(ctx context.Context, nameOrID string, opts LogsOptions, stdout, stderr io.Writer) error
	CopyToContainer(ctx context.Context, nameOrID, dstDir string, tarStream io.Reader) error
	CopyFromContainer(ctx context.Context, nameOrID, srcPath string) (io.ReadCloser, error)
	Exec(ctx context.Context, nameOrID string, cmd []string) (ExecResult, error)

	Close() error
}

// Info is the part of the engine's /info mltrain reads.
type Info struct {
	ServerVersion  string
	APIVersion     string
	OS             string
	Architecture   string
	NCPU           int
	MemTotal       int64
	DockerRootDir  string
	DefaultRuntime string
	Runtimes       []string // names, e.g. runc, nvidia
	CDISpecDirs    []string
	CDIDevices     []string // discovered CDI device names, e.g. nvidia.com/gpu=0 (engine >= 28)
}

// Image is an image as inspected.
type Image struct {
	ID      string
	Tags    []string
	Labels  map[string]string
	Size    int64
	Created string
}

// BuildOptions is a build from an in-memory tar context.
type BuildOptions struct {
	Context    io.Reader
	Dockerfile string // path inside the context; "Dockerfile" when empty
	Tags       []string
	Labels     map[string]string
	BuildArgs  map[string]string
	NoCache    bool
	Pull       bool         // always try to pull a newer base
	OnLine     func(string) // build output, one line at a time
}

// PullProgress is one layer's progress during a pull.
type PullProgress struct {
	Layer   string
	Status  string
	Current int64
	Total   int64
}

// Network is one engine network.
type Network struct {
	ID         string
	Name       string
	Labels     map[string]string
	Created    time.Time
	Containers []string // names of the containers attached to it
}

// Volume is a named volume.
type Volume struct {
	Name       string
	Labels     map[string]string
	Mountpoint string
	CreatedAt  string
	Driver     string            // "local" for the engine's own
	Options    map[string]string // the driver's options (local: type, device, o)
}

// Container is a container as listed.
type Container struct {
	ID      string
	Name    string // without the leading slash
	Image   string
	State   string // created, running, exited, ...
	Status  string // human text, e.g. "Up 3 minutes (healthy)"
	Labels  map[string]string
	Created time.Time
	Ports   []Port // published ports
}

// Port is a published container port.
type Port struct {
	HostIP        string
	HostPort      int
	ContainerPort int
	Proto         string
}

// ContainerDetails is a container as inspected.
type ContainerDetails struct {
	Container
	Running   bool
	Health    string // "", starting, healthy, unhealthy
	ExitCode  int
	OOMKilled bool
	// RestartCount is how often Docker's restart policy started it again.
	RestartCount int
	Error        string
	StartedAt    time.Time
	FinishedAt   time.Time
	Env          []string
	Networks     map[string]string // network name -> IPv4 address
	Config       *container.Config
	HostConfig   *container.HostConfig
}

// ContainerSpec is what ContainerCreate needs; the moby types are used as-is
// because compose/ translates a compose-go service into them one-to-one.
type ContainerSpec struct {
	Name       string
	Config     *container.Config
	HostConfig *container.HostConfig
	Networking *network.NetworkingConfig
}

// LogsOptions selects container output.
type LogsOptions struct {
	Tail       string // "all" or a number of lines
	Follow     bool
	Timestamps bool
	Since      string
}

// ExecResult is the outcome of a command run inside a container.
type ExecResult struct {
	ExitCode int
	Stdout   string
	Stderr   string
}

// NVIDIAPlumbing says how the engine can hand NVIDIA GPUs to containers:
// "the 'nvidia' runtime (NVIDIA Container Toolkit)", "NVIDIA CDI devices:
// …", or "" when it cannot (then device requests fail at container start).
func (i Info) NVIDIAPlumbing() string {
	for _, rt := range i.Runtimes {
		if rt == "nvidia" {
			return "the 'nvidia' runtime (NVIDIA Container Toolkit)"
		}
	}
	var cdi []string
	for _, dev := range i.CDIDevices {
		if strings.HasPrefix(dev, "nvidia.com/gpu=") {
			cdi = append(cdi, dev)
		}
	}
	if len(cdi) == 0 {
		return ""
	}
	sort.Strings(cdi)
	return "NVIDIA CDI devices: " + strings.Join(cdi, ", ")
}
