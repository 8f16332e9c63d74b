package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/images"
)

// RegistryTimeout bounds the whole registry check: every registry is
// dialled at once, and one that has not answered by then counts as out of
// reach.
const RegistryTimeout = 5 * time.Second

// DialRegistry resolves and connects to a registry's address (host:port),
// as the engine's pull would first do, and hangs up.
func DialRegistry(ctx context.Context, addr string) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// checkImages adds the images row: every image the lab uses (for the
// GPUs' vendor) is on this host, or its registry answers. `up` pulls what
// is missing, and a node that reaches no registry fails there.
func checkImages(ctx context.Context, d Deps, o Options, eng docker.Engine, vendor gpu.Vendor, r *Result) {
	if o.Images == nil {
		return
	}
	if eng == nil {
		r.add("images", Warn, "not checked: the Docker engine did not answer", "fix the docker row first")
		return
	}
	req, err := o.Images(vendor)
	if err == nil {
		var missing []string
		var total int
		missing, total, err = images.Missing(ctx, eng, req)
		if err == nil {
			imagesRow(ctx, d, missing, total, r)
			return
		}
	}
	r.add("images", Warn, "not checked: "+err.Error(), "")
}

// registryStatus is one registry the missing images come from.
type registryStatus struct {
	name, addr string
	refs       []string
	err        error
}

func imagesRow(ctx context.Context, d Deps, missing []string, total int, r *Result) {
	if len(missing) == 0 {
		r.add("images", Pass, fmt.Sprintf("all %d images the lab uses are on this host", total), "")
		return
	}
	var regs []*registryStatus
	byName := map[string]*registryStatus{}
	for _, ref := range missing {
		name, addr, err := images.Registry(ref)
		if err != nil {
			r.add("images", Warn, "not checked: "+err.Error(), "")
			return
		}
		if byName[name] == nil {
			byName[name] = &registryStatus{name: name, addr: addr}
			regs = append(regs, byName[name])
		}
		byName[name].refs = append(byName[name].refs, ref)
	}
	// Once per registry, all at once, within RegistryTimeout.
	dctx, cancel := context.WithTimeout(ctx, RegistryTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, g := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.err = d.DialRegistry(dctx, g.addr)
		}()
	}
	wg.Wait()
	var reached, out []string
	for _, g := range regs {
		if g.err == nil {
			reached = append(reached, g.name)
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s; for %s)", g.name, unreachable(g.err), strings.Join(g.refs, ", ")))
	}
	here := fmt.Sprintf("%d of the %d images the lab uses are on this host", total-len(missing), total)
	if len(out) == 0 {
		r.add("images", Pass, fmt.Sprintf("%s; 'up' pulls the other %d from %s (reached)", here, len(missing), strings.Join(reached, ", ")), "")
		return
	}
	detail := fmt.Sprintf("%s; 'up' must pull the other %d, and this host cannot reach %s: %s",
		here, len(missing), plural(len(out), "their registry", "these registries"), strings.Join(out, "; "))
	if len(reached) > 0 {
		detail += "; reached: " + strings.Join(reached, ", ")
	}
	r.addNext("images", Warn, detail, clierr.Next{
		Text: "preload the images: '%s' (after '%s' on a node that has them), or name images this host has: " +
			"'%s' with --image-head, --image-worker, --image-minio, --image-prometheus, --image-grafana or --image-jupyter REF",
		Commands: [][]string{{"images", "load", "FILE"}, {"images", "save", "FILE"}, {"up"}}})
}

// unreachable says in a few words why a registry's address did not answer.
func unreachable(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		return "cannot resolve its name: " + dns.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to it"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s", RegistryTimeout)
	}
	return err.Error()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// vendorOf is the vendor whose worker image the lab would use: "" (CPU
// rehearsal) without GPUs.
func vendorOf(rep gpu.Report) gpu.Vendor {
	for _, v := range []gpu.Vendor{gpu.NVIDIA, gpu.AMD} {
		if slices.ContainsFunc(rep.GPUs, func(g gpu.GPU) bool { return g.Vendor == v }) {
			return v
		}
	}
	return ""
}
