package ray

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
)

// LoadRuntimeEnv reads a runtime_env JSON file (what `ray job submit
// --runtime-env` takes; the lab's runtime.json).
func LoadRuntimeEnv(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, clierr.WithHint(fmt.Errorf("runtime env %s: %w", file, err), "pass --workspace with a directory holding runtime.json")
	}
	env := map[string]any{}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, clierr.WithHint(fmt.Errorf("runtime env %s is not a JSON object: %w", file, err), "fix the JSON in "+file)
	}
	return env, nil
}

// Prepared is a runtime_env ready to submit, and what it took.
type Prepared struct {
	RuntimeEnv map[string]any
	Package    *Package // nil when working_dir was already a URI or absent
	Uploaded   bool     // false when the cluster had the package already
}

func isURI(s string) bool { return strings.Contains(s, "://") }

// PrepareRuntimeEnv does what the Ray CLI does on the client before POST
// /api/jobs/: a local working_dir is packaged and uploaded and replaced by its
// gcs:// URI, and a pip requirements file is read into a package list. Local
// paths are resolved against baseDir (the Python CLI uses its CWD, which is the
// workspace when students run it there). env is not modified.
func (c *Client) PrepareRuntimeEnv(ctx context.Context, env map[string]any, baseDir string) (Prepared, error) {
	out := make(map[string]any, len(env))
	for k, v := range env {
		out[k] = v
	}
	var res Prepared
	if pipv, ok := out["pip"]; ok {
		pip, err := resolvePip(pipv, baseDir)
		if err != nil {
			return res, err
		}
		if pip == nil {
			delete(out, "pip")
		} else {
			out["pip"] = pip
		}
	}
	for _, k := range []string{"py_modules", "conda"} {
		if v, ok := out[k]; ok {
			if s, isStr := v.(string); isStr && !isURI(s) {
				return res, clierr.Hintf("remove "+k+" from the runtime env, or give a URI",
					"runtime_env %s %q is a local path; mltrain uploads only working_dir", k, s)
			}
		}
	}
	if wd, ok := out["working_dir"]; ok {
		s, isStr := wd.(string)
		if !isStr {
			return res, fmt.Errorf("runtime_env working_dir must be a string, got %T", wd)
		}
		if !isURI(s) {
			dir := s
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(baseDir, dir)
			}
			var excludes []string
			if ex, ok := out["excludes"].([]any); ok {
				for _, e := range ex {
					if es, ok := e.(string); ok {
						excludes = append(excludes, es)
					}
				}
			}
			p, err := PackageDir(dir, excludes)
			if err != nil {
				return res, err
			}
			up, err := c.UploadPackage(ctx, p)
			if err != nil {
				return res, err
			}
			out["working_dir"] = p.URI
			res.Package, res.Uploaded = p, up
		}
	}
	res.RuntimeEnv = out
	return res, nil
}

// resolvePip turns the pip field into {"packages": [...], "pip_check": false}
// (nil when there is nothing to install), reading a requirements file.
func resolvePip(v any, baseDir string) (any, error) {
	switch p := v.(type) {
	case string:
		pk, err := readRequirements(p, baseDir)
		if err != nil || len(pk) == 0 {
			return nil, err
		}
		return map[string]any{"packages": pk, "pip_check": false}, nil
	case []any:
		if len(p) == 0 {
			return nil, nil
		}
		return map[string]any{"packages": p, "pip_check": false}, nil
	case map[string]any:
		out := map[string]any{}
		for k, x := range p {
			out[k] = x
		}
		if s, ok := p["packages"].(string); ok {
			pk, err := readRequirements(s, baseDir)
			if err != nil {
				return nil, err
			}
			out["packages"] = pk
		}
		if _, ok := out["pip_check"]; !ok {
			out["pip_check"] = false
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("runtime_env pip must be a file name, a list or an object, got %T", v)
}

// readRequirements reads a requirements file into a de-duplicated list in
// file order. Unlike Ray it also drops blank and comment lines, which pip
// would ignore anyway, so the job's runtime_env in the dashboard stays clean.
func readRequirements(name, baseDir string) ([]any, error) {
	file := name
	if !filepath.IsAbs(file) {
		file = filepath.Join(baseDir, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, clierr.WithHint(fmt.Errorf("runtime_env pip requirements %s: %w", file, err),
			"create "+file+" or remove \"pip\" from runtime.json")
	}
	seen := map[string]bool{}
	var out []any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || seen[line] {
			continue
		}
		seen[line] = true
		out = append(out, line)
	}
	return out, nil
}
