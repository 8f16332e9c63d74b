package images

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/distribution/reference"
)

// Reading a Dockerfile for what a build needs before it runs: the base images
// it pulls (FROM, with global ARGs resolved) and whether they are pinned.

// instruction is one Dockerfile instruction with continuations joined.
type instruction struct {
	cmd  string // upper case: FROM, ARG, RUN...
	args string
	line int
}

func parse(df []byte) []instruction {
	var out []instruction
	sc := bufio.NewScanner(bytes.NewReader(df))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cur strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue // comments and blank lines may sit inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(line)
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			continue
		}
		cmd, args, _ := strings.Cut(text, " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
	}
	return out
}

// ArgDefaults returns every ARG's default in order of appearance
// (name -> defaults); ARGs without a default are left out.
func ArgDefaults(df []byte) map[string][]string {
	out := map[string][]string{}
	for _, in := range parse(df) {
		if in.cmd != "ARG" {
			continue
		}
		if name, def, ok := strings.Cut(in.args, "="); ok {
			out[name] = append(out[name], strings.Trim(def, `"'`))
		}
	}
	return out
}

// BaseImages lists the images a Dockerfile builds FROM, with global ARGs
// resolved (their defaults, overridden by args); scratch and earlier build
// stages are left out. An ARG without a value is an error naming it.
func BaseImages(df []byte, args map[string]string) ([]string, error) {
	global := map[string]string{}
	stages := map[string]bool{}
	seenFrom := false
	var out []string
	seen := map[string]bool{}
	for _, in := range parse(df) {
		switch in.cmd {
		case "ARG":
			if seenFrom {
				continue // stage ARGs do not reach FROM lines
			}
			name, def, _ := strings.Cut(in.args, "=")
			name = strings.TrimSpace(name)
			if v, ok := args[name]; ok {
				global[name] = v
			} else if def != "" {
				global[name] = strings.Trim(def, `"'`)
			}
		case "FROM":
			seenFrom = true
			fields := strings.Fields(in.args)
			var image string
			for i := 0; i < len(fields); i++ {
				f := fields[i]
				if strings.HasPrefix(f, "--") {
					continue
				}
				if image == "" {
					image = f
					continue
				}
				if strings.EqualFold(f, "AS") && i+1 < len(fields) {
					stages[strings.ToLower(fields[i+1])] = true
				}
				break
			}
			if image == "" {
				return nil, fmt.Errorf("line %d: FROM without an image", in.line)
			}
			var missing []string
			resolved := os.Expand(image, func(v string) string {
				name, def, hasDef := strings.Cut(v, ":-")
				if val, ok := global[name]; ok && val != "" {
					return val
				}
				if hasDef {
					return def
				}
				missing = append(missing, name)
				return ""
			})
			if len(missing) > 0 {
				return nil, fmt.Errorf("line %d: FROM %s uses $%s, which has no value (give the ARG a default)", in.line, image, missing[0])
			}
			if strings.EqualFold(resolved, "scratch") || stages[strings.ToLower(resolved)] {
				continue
			}
			if !seen[resolved] {
				seen[resolved] = true
				out = append(out, resolved)
			}
		}
	}
	return out, nil
}

// CheckPinned reports an image reference that is not pinned: no tag (which
// means latest), the tag latest, or not a valid reference. A digest pins too.
func CheckPinned(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("image %q is not a valid reference: %w", ref, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil
	}
	t, ok := named.(reference.Tagged)
	if !ok {
		return fmt.Errorf("image %q has no tag, which means latest: pin an explicit version tag", ref)
	}
	if t.Tag() == "latest" {
		return fmt.Errorf("image %q uses the tag latest: pin an explicit version tag", ref)
	}
	return nil
}
