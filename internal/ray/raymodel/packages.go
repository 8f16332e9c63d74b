package raymodel

import (
	"strings"
	"time"
)

// A working_dir package in the GCS's internal KV. Ray counts references to
// its URI (src/ray/gcs/gcs_server/runtime_env_handler / RuntimeEnvManager):
// a job's detached supervisor actor holds one from its registration until it
// dies, and GET /api/packages/... takes a temporary one that expires after
// PackagePin (job_head.py get_package -> pin_runtime_env_uri). When the
// count drops to zero the package is deleted. A PUT alone takes none: an
// upload nobody ever referenced stays until the cluster ends.
type pkg struct {
	data    []byte
	stored  bool
	pins    []time.Time // expiry of each temporary reference
	touched bool        // has had a reference: dropping the last deletes it
}

// PinPackage is GET /api/packages/gcs/<name>: it takes a temporary
// reference (even to a package not uploaded yet, as Ray pins before it
// checks) and reports whether the package exists.
func (c *Cluster) PinPackage(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	p := c.pkgs[name]
	if p == nil {
		p = &pkg{}
		c.pkgs[name] = p
	}
	p.pins = append(p.pins, c.now().Add(c.cfg.PackagePin))
	p.touched = true
	return p.stored
}

// PutPackage is PUT /api/packages/gcs/<name>: the upload.
func (c *Cluster) PutPackage(name string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pkgs[name]
	if p == nil {
		p = &pkg{}
		c.pkgs[name] = p
	}
	p.data, p.stored = append([]byte(nil), data...), true
}

// Package returns an uploaded package's bytes, if the GCS still has it.
func (c *Cluster) Package(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	p := c.pkgs[name]
	if p == nil || !p.stored {
		return nil, false
	}
	return p.data, true
}

// packageName is the GCS key of a gcs:// working_dir URI ("" for others).
func packageName(uri string) string {
	if !strings.HasPrefix(uri, "gcs://") {
		return ""
	}
	return strings.TrimPrefix(uri, "gcs://")
}

// jobPackages are the gcs:// packages a job's runtime env names.
func jobPackages(env map[string]any) []string {
	var out []string
	if wd, ok := env["working_dir"].(string); ok && packageName(wd) != "" {
		out = append(out, packageName(wd))
	}
	if mods, ok := env["py_modules"].([]any); ok {
		for _, m := range mods {
			if s, ok := m.(string); ok && packageName(s) != "" {
				out = append(out, packageName(s))
			}
		}
	}
	return out
}

// stepPackages drops expired pins and deletes what nothing references.
func (c *Cluster) stepPackages(now time.Time) {
	held := map[string]bool{}
	for _, j := range c.jobs {
		if j.actor != ActorDead {
			for _, name := range jobPackages(j.Request.RuntimeEnv) {
				held[name] = true
				if p := c.pkgs[name]; p != nil {
					p.touched = true
				}
			}
		}
	}
	for name, p := range c.pkgs {
		live := p.pins[:0]
		for _, until := range p.pins {
			if now.Before(until) {
				live = append(live, until)
			}
		}
		p.pins = live
		if p.touched && len(p.pins) == 0 && !held[name] {
			delete(c.pkgs, name)
		}
	}
}
