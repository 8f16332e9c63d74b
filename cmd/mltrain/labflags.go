package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// labFlags are the lab's options as flags, shared by render and up so both
// plan the same lab from the same command line.
type labFlags struct {
	opts   plan.Options
	shm    string
	hostIP string
	nodeIP string
	images map[service.Role]*string
	ports  map[string]int
	// leaseEnd is up's --lease-end, parsed (zero when not given).
	leaseEnd time.Time
}

// addLabFlags registers the lab's option flags on fs.
func addLabFlags(fs *pflag.FlagSet) *labFlags {
	f := &labFlags{images: map[service.Role]*string{}}
	fs.StringVar(&f.opts.RayVersion, "ray-version", plan.DefaultRayVersion, "Ray version of every node (>= 2.52: token authentication)")
	fs.IntVar(&f.opts.Workers, "workers", 0, "number of Ray workers (default: one per GPU; 2 in CPU rehearsal)")
	fs.BoolVar(&f.opts.ShareGPU, "share-gpu", false, "on a host with one GPU, run two workers on it")
	fs.StringVar(&f.opts.Bind, "bind", plan.DefaultBind, "address the browser ports (8265, 3000, 8888, 9001) are published on")
	fs.StringVar(&f.hostIP, "host-ip", "", "address students' browsers use to reach the host (default: detected)")
	fs.IntVar(&f.opts.HeadCPUs, "head-cpus", 0, "CPUs the Ray head advertises (default: sized from the host)")
	fs.IntVar(&f.opts.WorkerCPUs, "worker-cpus", 0, "CPUs each Ray worker advertises (default: the host's CPUs split across workers)")
	fs.StringVar(&f.shm, "shm-size", "", "shared memory per worker, e.g. 12g (default: about 30% of memory split across workers)")
	fs.StringVar(&f.opts.DataVolume, "data-volume", plan.DefaultDataVolume, "Docker volume holding the Food-11 dataset")
	fs.StringVar(&f.opts.Workspace, "workspace", plan.DefaultWorkspace, "directory mounted in Jupyter (relative to the state dir)")
	for _, s := range service.All {
		f.images[s.Role] = fs.String("image-"+string(s.Role), "", s.ImageHelp)
	}
	fs.StringToIntVar(&f.ports, "port", nil, "host port by name, e.g. --port dashboard=18265 (names: "+strings.Join(service.PortNames(), ", ")+")")
	fs.BoolVar(&f.opts.AllowJoin, "allow-join", false, "accept workers from other hosts ('mltrain join-token' then prints their join line): Ray's nodes run on the host network")
	fs.IntVar(&f.opts.RayPortBase, "ray-port-base", plan.DefaultRayPortBase, "with --allow-join: first of the ports Ray's nodes use on each host (1000 per node)")
	fs.StringVar(&f.nodeIP, "node-ip", "", "with --allow-join: this host's address on the network the other hosts share (default: the default-route interface's)")
	return f
}

// options turns the flags into plan.Options for project and validates them.
func (f *labFlags) options(project string) (plan.Options, error) {
	o := f.opts
	o.Project = project
	if f.shm != "" {
		b, err := plan.ParseSize("--shm-size", f.shm)
		if err != nil {
			return plan.Options{}, err
		}
		o.WorkerShm = b
	}
	for r, v := range f.images {
		if *v != "" {
			if o.Images == nil {
				o.Images = map[service.Role]string{}
			}
			o.Images[r] = *v
		}
	}
	if len(f.ports) > 0 {
		o.Ports = f.ports
	}
	if err := o.Validate(); err != nil {
		return plan.Options{}, err
	}
	return o, nil
}

// choices are the lab's choices for this command: the lab's recorded ones
// in dir (its last up's), with what this command line names over them, and
// what that changes, in words. A lab with none recorded takes the flags as
// they are.
func (f *labFlags) choices(project string, fl *pflag.FlagSet, dir state.Dir) (plan.Choices, []string, error) {
	o, err := f.options(project)
	if err != nil {
		return plan.Choices{}, nil, err
	}
	c := plan.Choices{Options: o, HostIP: f.hostIP, NodeIP: f.nodeIP, LeaseEnd: f.leaseEnd}
	prev, ok := dir.Choices()
	if !ok {
		return c, nil, nil
	}
	c = c.Over(prev, fl.Changed)
	if err := c.Options.Validate(); err != nil {
		return plan.Choices{}, nil, err
	}
	return c, c.Changes(prev), nil
}
