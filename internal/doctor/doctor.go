// Package doctor checks that a host is ready for the lab: the Docker engine,
// GPU drivers and their container plumbing, device permissions, ports, disk
// and the address browsers will use, and whether the lab's images are here or their
// registries answer. Each finding is a row with a status and,
// when it is not a pass, the command that fixes it.
//
// Run takes its windows on the world as Deps so every branch is testable with
// fakes; System returns the real ones.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ports"
)

// Status of one check.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one row of the report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	// Next is Fix's structure when it names mltrain commands: the command
	// layer writes them for the lab the user means (FixWith).
	Next *clierr.Next `json:"-"`
}

// FixWith is the fix with its mltrain commands written by line.
func (c Check) FixWith(line func(words ...string) string) string {
	if c.Next != nil {
		return c.Next.Write(line)
	}
	return c.Fix
}

// Result is the whole report; OK is false when any check failed.
type Result struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Deps are what doctor looks at. Every field must be set; System sets them all.
type Deps struct {
	// Connect opens the Docker engine (the CLI's, honouring DOCKER_HOST and contexts).
	Connect func(ctx context.Context) (docker.Engine, error)
	// DetectGPUs is gpu.Detect with the host's options.
	DetectGPUs func(ctx context.Context) (gpu.Report, error)
	// HostIP is host.FindHostIP with the host's options.
	HostIP func(ctx context.Context) (ip, source string, err error)
	// PortFree returns nil when a listener could bind the TCP port on all addresses.
	PortFree func(port int) error
	// DiskFree returns the bytes available to unprivileged users under path.
	DiskFree func(path string) (uint64, error)
	// Access returns nil when this user can read and write the device (a /dev path).
	Access func(devPath string) error
	// Groups returns the host's render and video group ids (0 when absent).
	Groups func() (render, video int)
	// DialRegistry connects to a registry's host:port and hangs up
	// (DialRegistry); used when Options.Images is set.
	DialRegistry func(ctx context.Context, addr string) error
}

// Options tunes Run.
type Options struct {
	// Project is this lab's Compose project: its own containers holding the
	// lab's ports are not a problem.
	Project string
	// Ports to check; default LabPorts.
	Ports []int
	// MinDiskBytes under which free space in Docker's root is a warning; default 60 GiB.
	MinDiskBytes uint64
	// Driver is what the worker images need from the GPU driver; the CLI
	// passes dockerfiles.DriverNeed(). Left zero, the driver rows say
	// "not checked" (a warning), never pass.
	Driver gpu.DriverNeed
	// Images are the images a lab on a host with vendor's GPUs ("": none)
	// uses, as up would ensure them; nil leaves the images row out.
	Images func(vendor gpu.Vendor) (images.Request, error)
}

// LabPorts are the host ports the lab publishes: Ray dashboard, Grafana,
// Jupyter, MinIO console.
var LabPorts = []int{8265, 3000, 8888, 9001}

// DefaultMinDisk is the free space the lab's images, dataset and checkpoints need.
const DefaultMinDisk = 60 << 30

// Fixes other packages and docs refer to.
const (
	FixNVIDIARuntime = "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker (install nvidia-container-toolkit first if nvidia-ctk is missing)"
	FixAMDGroups     = "sudo usermod -aG video,render $USER, then log out and back in (or run 'newgrp render')"
	FixDockerStart   = "start Docker ('sudo systemctl start docker'), or point DOCKER_HOST or 'docker context use' at a running engine"
	FixDockerGroup   = "sudo usermod -aG docker $USER, then log out and back in (or run 'newgrp docker')"
)

// Run performs every check. It never fails as a whole: what goes wrong is a row.
func Run(ctx context.Context, d Deps, o Options) Result {
	if len(o.Ports) == 0 {
		o.Ports = LabPorts
	}
	if o.MinDiskBytes == 0 {
		o.MinDiskBytes = DefaultMinDisk
	}
	r := &Result{Checks: []Check{}}

	eng, info, engErr := checkEngine(ctx, d, r)
	if eng != nil {
		defer eng.Close()
	}
	rep, gpuErr := d.DetectGPUs(ctx)
	checkGPUs(rep, gpuErr, r)
	if gpuErr == nil {
		checkDriver(rep, o.Driver, r)
		if usesVendor(rep, gpu.NVIDIA) {
			checkNVIDIA(rep, info, engErr, r)
		}
		if rep.Has(gpu.AMD) {
			checkAMD(rep, d, r)
		}
	}
	checkImages(ctx, d, o, eng, vendorOf(rep), r)
	checkPorts(ctx, d, o, eng, r)
	checkDisk(d, o, info, engErr, r)
	checkAddress(ctx, d, r)

	r.OK = true
	for _, c := range r.Checks {
		if c.Status == Fail {
			r.OK = false
		}
	}
	return *r
}

func (r *Result) add(name string, s Status, detail, fix string) {
	r.Checks = append(r.Checks, Check{Name: name, Status: s, Detail: detail, Fix: fix})
}

// addProblem adds the row of a GPU problem, its fix's commands kept as words.
func (r *Result) addProblem(name string, p gpu.Problem) {
	r.Checks = append(r.Checks, Check{Name: name, Status: status(p), Detail: p.Message, Fix: p.Fix, Next: p.Next})
}

// addNext adds a row whose fix names mltrain commands.
func (r *Result) addNext(name string, s Status, detail string, fix clierr.Next) {
	r.Checks = append(r.Checks, Check{Name: name, Status: s, Detail: detail, Fix: fix.String(), Next: &fix})
}

func checkEngine(ctx context.Context, d Deps, r *Result) (docker.Engine, docker.Info, error) {
	eng, err := d.Connect(ctx)
	if err != nil {
		fix := FixDockerStart
		if isPermission(err) {
			fix = FixDockerGroup
		} else if h := clierr.Hint(err); h != "" {
			fix = h
		}
		r.add("docker", Fail, err.Error(), fix)
		return nil, docker.Info{}, err
	}
	info, err := eng.Info(ctx)
	if err != nil {
		r.add("docker", Fail, fmt.Sprintf("the engine at %s answered but 'docker info' failed: %v", eng.Host(), err), FixDockerStart)
		return eng, docker.Info{}, err
	}
	r.add("docker", Pass, fmt.Sprintf("Docker %s (API %s) at %s", info.ServerVersion, info.APIVersion, eng.Host()), "")
	return eng, info, nil
}

func isPermission(err error) bool {
	return errors.Is(err, fs.ErrPermission) || strings.Contains(strings.ToLower(err.Error()), "permission denied")
}

// usesVendor: the host has that vendor's GPUs, or hardware of that vendor a
// problem is about (so its container plumbing is worth checking too).
func usesVendor(rep gpu.Report, v gpu.Vendor) bool {
	if rep.Has(v) {
		return true
	}
	for _, p := range rep.Problems {
		if p.Vendor == v {
			return true
		}
	}
	return false
}

func checkGPUs(rep gpu.Report, err error, r *Result) {
	if err != nil {
		r.add("gpus", Fail, err.Error(), clierr.Hint(err))
		return
	}
	n := len(rep.GPUs)
	switch {
	case n >= 2:
		r.add("gpus", Pass, describeGPUs(rep.GPUs), "")
	case n == 1:
		r.addNext("gpus", Warn, describeGPUs(rep.GPUs)+"; the standard lab has one Ray worker per GPU and needs 2",
			clierr.Next{Text: "run '%s' to let two workers share this GPU", Commands: [][]string{{"up", "--share-gpu"}}})
	case rep.HardwareWithoutDriver():
		r.addNext("gpus", Fail, "GPU hardware is present but not usable (see the rows below)",
			clierr.Next{Text: "fix the rows below, then run '%s' again", Commands: [][]string{{"doctor"}}})
	default:
		r.add("gpus", Warn, "no GPU hardware: 'mltrain up' will build a CPU-only rehearsal of the lab",
			"lease a GPU node (2x NVIDIA A100 or 2x AMD MI100) for the real lab")
	}
	for _, p := range rep.Problems {
		if p.Code == gpu.CodeNoGPU {
			continue
		}
		r.addProblem("gpu "+p.Code, p)
	}
}

func status(p gpu.Problem) Status {
	if p.Warning() {
		return Warn
	}
	return Fail
}

// driverRow names the driver row of each vendor.
var driverRow = map[gpu.Vendor]string{gpu.NVIDIA: "nvidia driver", gpu.AMD: "amdgpu driver"}

// checkDriver adds a row per vendor with GPUs: its driver against what the
// worker image needs (gpu.CheckDriver, the same check up runs).
func checkDriver(rep gpu.Report, need gpu.DriverNeed, r *Result) {
	problems := gpu.CheckDriver(rep, need)
	for _, v := range []gpu.Vendor{gpu.NVIDIA, gpu.AMD} {
		if !rep.Has(v) {
			continue
		}
		var found *gpu.Problem
		for i := range problems {
			if problems[i].Vendor == v {
				found = &problems[i]
			}
		}
		if found == nil {
			r.add(driverRow[v], Pass, rep.DriverSummary(v)+"; "+need.Describe(v), "")
			continue
		}
		r.addProblem(driverRow[v], *found)
	}
}

func describeGPUs(gs []gpu.GPU) string {
	counts := map[string]int{}
	var names []string
	for _, g := range gs {
		if counts[g.Name] == 0 {
			names = append(names, g.Name)
		}
		counts[g.Name]++
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%dx %s", counts[n], n))
	}
	noun := "GPUs"
	if len(gs) == 1 {
		noun = "GPU"
	}
	return fmt.Sprintf("%d %s %s: %s", len(gs), gs[0].Vendor, noun, strings.Join(parts, ", "))
}

func checkNVIDIA(rep gpu.Report, info docker.Info, engErr error, r *Result) {
	if engErr != nil {
		r.add("nvidia runtime", Warn, "not checked: the Docker engine did not answer", "fix the docker row first")
		return
	}
	if how := info.NVIDIAPlumbing(); how != "" {
		r.add("nvidia runtime", Pass, "the engine has "+how, "")
		return
	}
	r.add("nvidia runtime", Fail,
		fmt.Sprintf("the Docker engine has no 'nvidia' runtime (runtimes: %s) and no nvidia.com/gpu CDI devices, so containers cannot get a GPU",
			strings.Join(info.Runtimes, ", ")),
		FixNVIDIARuntime)
}

func checkAMD(rep gpu.Report, d Deps, r *Result) {
	devs := []string{"/dev/kfd"}
	for _, g := range rep.GPUs {
		if g.Vendor == gpu.AMD && g.RenderNode != "" {
			devs = append(devs, g.RenderNode)
		}
	}
	render, video := d.Groups()
	if render > 0 {
		r.add("render group", Pass, fmt.Sprintf("render gid %d, video gid %d: AMD containers get them with group_add", render, video), "")
	} else {
		r.add("render group", Warn, "this host has no 'render' group and /dev/kfd has no owning group to use instead",
			"check the amdgpu install: 'getent group render video' and 'ls -l /dev/kfd /dev/dri'")
	}
	for _, dev := range devs {
		err := d.Access(dev)
		switch {
		case err == nil:
			r.add(dev, Pass, "exists and this user can read and write it", "")
		case errors.Is(err, fs.ErrNotExist):
			what := "the GPU's render node is missing"
			if dev == "/dev/kfd" {
				what = "the amdgpu driver's compute interface (KFD) is not loaded"
			}
			r.add(dev, Fail, dev+" does not exist: "+what,
				"load it ('sudo modprobe amdgpu'); if that fails install the driver ('sudo amdgpu-install -y --usecase=dkms') and reboot")
		case errors.Is(err, fs.ErrPermission):
			r.add(dev, Fail, "permission denied on "+dev+": this user is not in the group that owns it (video/render)", FixAMDGroups)
		default:
			r.add(dev, Fail, fmt.Sprintf("cannot use %s: %v", dev, err), FixAMDGroups)
		}
	}
}

func checkPorts(ctx context.Context, d Deps, o Options, eng docker.Engine, r *Result) {
	var containers []docker.Container
	if eng != nil {
		containers, _ = eng.ContainerList(ctx, nil) // best effort: only used to name a holder
	}
	for _, port := range o.Ports {
		name := fmt.Sprintf("port %d", port)
		if c, ok := ports.Holder(containers, port); ok {
			if o.Project != "" && c.Labels[labels.Project] == o.Project {
				r.add(name, Pass, fmt.Sprintf("published by this lab's container %s", c.Name), "")
			} else {
				r.addNext(name, Fail, fmt.Sprintf("in use by container %s (%s)", c.Name, c.Image),
					clierr.Next{Text: "stop it ('docker stop " + strings.ReplaceAll(c.Name, "%", "%%") + "') or remove it, then run '%s' again", Commands: [][]string{{"doctor"}}})
			}
			continue
		}
		if err := d.PortFree(port); err != nil {
			r.add(name, Fail, fmt.Sprintf("in use by another process (%v)", err),
				fmt.Sprintf("find it with 'sudo ss -ltnp sport = :%d' and stop it", port))
			continue
		}
		r.add(name, Pass, "free", "")
	}
}

func checkDisk(d Deps, o Options, info docker.Info, engErr error, r *Result) {
	if engErr != nil || info.DockerRootDir == "" {
		r.add("disk", Warn, "not checked: Docker's root directory is unknown (the engine did not answer)", "fix the docker row first")
		return
	}
	free, err := d.DiskFree(info.DockerRootDir)
	if err != nil {
		r.add("disk", Warn, fmt.Sprintf("cannot measure free space in Docker's root %s: %v (a remote engine?)", info.DockerRootDir, err),
			"check it on the engine's host with 'df -h "+info.DockerRootDir+"'")
		return
	}
	detail := fmt.Sprintf("%s free in Docker's root %s", gib(free), info.DockerRootDir)
	if free < o.MinDiskBytes {
		r.add("disk", Warn, fmt.Sprintf("%s; the lab's images, dataset and checkpoints need about %s", detail, gib(o.MinDiskBytes)),
			"free space ('docker system prune', 'docker image prune -a') or move Docker's data-root to a larger disk")
		return
	}
	r.add("disk", Pass, detail, "")
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func checkAddress(ctx context.Context, d Deps, r *Result) {
	ip, src, err := d.HostIP(ctx)
	switch {
	case err != nil:
		r.add("address", Fail, err.Error(), clierr.Hint(err))
	case src == host.SourceLoopback:
		r.add("address", Warn, "no metadata address and no default route: the lab's URLs will say 127.0.0.1, which only this machine can open",
			"pass the address students' browsers reach: --host-ip <address>")
	default:
		how := map[string]string{host.SourceFlag: "from --host-ip", host.SourceMetadata: "from the cloud metadata service",
			host.SourceDefaultRoute: "the default-route interface's address"}[src]
		r.add("address", Pass, fmt.Sprintf("browsers will use %s (%s)", ip, how), "")
	}
}
