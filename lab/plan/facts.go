package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/docker/go-units"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/host"
)

// FactsFrom is where a plan's host facts come from: this host, detected,
// or another host described by flags (--gpus-from FILE, the output of
// 'mltrain gpus --json' there, with --cpus and --memory), to plan a lab
// for a host you are not on.
type FactsFrom struct {
	GPUsFrom string
	CPUs     int    // the host's CPU count; also replaces the detected one
	Memory   string // the host's memory, e.g. 256g; also replaces the detected size
	// With GPUsFrom on AMD: the host's render and video group ids.
	RenderGID, VideoGID int
	HostIP, NodeIP      string
	// FindNodeIP resolves NodeIP as detection would (a joining host's plan
	// needs its node address even when its GPUs come from a file).
	FindNodeIP bool
}

// Facts are the host's facts as f says.
func (f FactsFrom) Facts(ctx context.Context) (host.Facts, error) {
	var facts host.Facts
	var err error
	if f.GPUsFrom != "" {
		if f.CPUs <= 0 || f.Memory == "" {
			return host.Facts{}, clierr.WithCode(clierr.Hintf("add --cpus N --memory SIZE for the host the GPU list comes from",
				"--gpus-from plans for another host: --cpus and --memory are required"), clierr.ExitUsage)
		}
		if facts.GPUs, err = ReadGPUReport(f.GPUsFrom); err != nil {
			return host.Facts{}, err
		}
		facts.HostIP, facts.NodeIP, facts.RenderGID, facts.VideoGID = f.HostIP, f.NodeIP, f.RenderGID, f.VideoGID
		if f.FindNodeIP {
			if facts.NodeIP, err = host.FindNodeIP(host.Options{NodeIP: f.NodeIP}); err != nil {
				return host.Facts{}, err
			}
		}
	} else if facts, err = host.Detect(ctx, host.Options{HostIP: f.HostIP, NodeIP: f.NodeIP}); err != nil {
		return host.Facts{}, err
	}
	if f.CPUs > 0 {
		facts.CPUs = f.CPUs
	}
	if f.Memory != "" {
		if facts.MemoryBytes, err = ParseSize("--memory", f.Memory); err != nil {
			return host.Facts{}, err
		}
	}
	return facts, nil
}

// ParseSize reads a size flag such as 12g, 512m, 256GiB or a byte count.
func ParseSize(flag, s string) (int64, error) {
	b, err := units.RAMInBytes(strings.TrimSpace(s))
	if err != nil || b <= 0 {
		return 0, clierr.WithCode(clierr.Hintf(fmt.Sprintf("give a size such as %s 16g or %s 512m", flag, flag), "%s %q is not a size", flag, s), clierr.ExitUsage)
	}
	return b, nil
}
