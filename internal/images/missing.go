package images

import (
	"context"
	"fmt"
	"net"

	"github.com/distribution/reference"

	"github.com/mltrain/mltrain/internal/docker"
)

// Missing is what Ensure would have to pull for req: the external images
// and the bases of the builds that are not up to date, less those already
// on this host. total counts every image looked at.
func Missing(ctx context.Context, eng docker.Engine, req Request) (missing []string, total int, err error) {
	refs := append([]string(nil), req.Pull...)
	for _, s := range req.Build {
		fresh, err := upToDate(ctx, eng, s)
		if err != nil {
			return nil, 0, err
		}
		total++
		if fresh {
			continue
		}
		bases, err := Bases(s)
		if err != nil {
			return nil, 0, err
		}
		refs = append(refs, bases...)
	}
	for _, ref := range Dedupe(refs) {
		total++
		_, err := eng.ImageInspect(ctx, ref)
		switch {
		case err == nil:
		case docker.IsNotFound(err):
			missing = append(missing, ref)
		default:
			return nil, 0, fmt.Errorf("inspect image %s: %w", ref, err)
		}
	}
	return missing, total, nil
}

// Registry is the host[:port] the engine pulls ref from, and the TCP
// address it connects to: Docker Hub's images come from
// registry-1.docker.io, and a registry without a port answers on 443.
func Registry(ref string) (registry, addr string, err error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", fmt.Errorf("image %q: %w", ref, err)
	}
	registry = reference.Domain(named)
	if registry == "docker.io" {
		registry = "registry-1.docker.io"
	}
	if _, _, err := net.SplitHostPort(registry); err == nil {
		return registry, registry, nil
	}
	return registry, net.JoinHostPort(registry, "443"), nil
}
