package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Compose's conventional file names: a project's file and the user's override
// merged over it, the standard way.
const (
	ComposeFile  = "compose.yaml"
	OverrideFile = "compose.override.yaml"
)

// Load reads dir/compose.yaml, merged with dir/compose.override.yaml when
// present, through compose-go's loader exactly as `docker compose` would
// (schema validation, interpolation from the environment and dir/.env,
// paths resolved against dir). The project name is the one compose.yaml
// declares: COMPOSE_PROJECT_NAME is ignored, so a stray variable cannot
// point mltrain at another lab.
func Load(ctx context.Context, dir string) (*types.Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	main := filepath.Join(abs, ComposeFile)
	if _, err := os.Stat(main); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, clierr.Mark(fmt.Errorf("%s does not exist", main), ErrNotRendered)
		}
		return nil, fmt.Errorf("reading %s: %w", main, err)
	}
	files := []string{main}
	what := main
	override := filepath.Join(abs, OverrideFile)
	if _, err := os.Stat(override); err == nil {
		files = append(files, override)
		what += " + " + OverrideFile
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COMPOSE_PROJECT_NAME=") && !strings.HasPrefix(kv, "COMPOSE_FILE=") {
			env = append(env, kv)
		}
	}
	opts, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory(abs),
		cli.WithEnv(env),
		cli.WithDotEnv,
	)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", what, err)
	}
	proj, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, clierr.WithHint(fmt.Errorf("loading %s: %w", what, err),
			"fix "+override+" (compose.yaml itself is rewritten on every render)")
	}
	if err := proj.CheckContainerNameUnicity(); err != nil {
		return nil, clierr.WithHint(fmt.Errorf("%s: %w", what, err), "give each service its own container_name in "+override)
	}
	if err := CheckPorts(proj); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return proj, nil
}

type hostBinding struct {
	service string
	ip      netip.Addr // invalid = every address
	port    int
	proto   string
}

func (a hostBinding) overlaps(b hostBinding) bool {
	if a.port != b.port || a.proto != b.proto {
		return false
	}
	if !a.ip.IsValid() || !b.ip.IsValid() || a.ip.IsUnspecified() || b.ip.IsUnspecified() {
		return true
	}
	return a.ip == b.ip
}

// CheckPorts refuses a project in which two services publish the same host
// port on overlapping addresses: the second container could never start.
func CheckPorts(p *types.Project) error {
	names := make([]string, 0, len(p.Services))
	for n := range p.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	var seen []hostBinding
	for _, n := range names {
		for _, pc := range p.Services[n].Ports {
			if pc.Published == "" {
				continue // an ephemeral port the engine picks
			}
			lo, hi, err := portRange(pc.Published)
			if err != nil {
				return clierr.Hintf("fix the port in compose.override.yaml", "service %s publishes %q: %v", n, pc.Published, err)
			}
			b := hostBinding{service: n, proto: pc.Protocol}
			if b.proto == "" {
				b.proto = "tcp"
			}
			if pc.HostIP != "" {
				if b.ip, err = netip.ParseAddr(pc.HostIP); err != nil {
					return clierr.Hintf("use an IP address as host_ip", "service %s: host_ip %q is not an IP address", n, pc.HostIP)
				}
			}
			for port := lo; port <= hi; port++ {
				b.port = port
				for _, o := range seen {
					if o.overlaps(b) {
						who := fmt.Sprintf("services %s and %s both publish", o.service, n)
						if o.service == n {
							who = fmt.Sprintf("service %s publishes twice", n)
						}
						return clierr.Hintf("give one of them another host port (--port NAME=PORT, or compose.override.yaml)",
							"%s host port %d/%s", who, port, b.proto)
					}
				}
				seen = append(seen, b)
			}
		}
	}
	return nil
}

func portRange(s string) (int, int, error) {
	loS, hiS, isRange := strings.Cut(s, "-")
	lo, err := strconv.Atoi(loS)
	if err != nil {
		return 0, 0, fmt.Errorf("not a port number")
	}
	hi := lo
	if isRange {
		if hi, err = strconv.Atoi(hiS); err != nil || hi < lo {
			return 0, 0, fmt.Errorf("not a port range")
		}
	}
	if lo < 1 || hi > 65535 {
		return 0, 0, fmt.Errorf("port out of range 1-65535")
	}
	return lo, hi, nil
}
