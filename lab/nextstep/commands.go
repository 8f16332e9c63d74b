// Package nextstep writes the command lines a next step names: for the lab
// the user means (its --project and --state-dir) and the command they ran,
// with every flag they gave. Layers below name commands as words
// (clierr.Next) or return typed errors; only this one writes them.
package nextstep

import (
	"errors"
	"slices"
	"strings"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/ready"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// Commands writes the mltrain command lines a next step names, for the lab
// and the command the user ran: compose/ and internal/ say what went wrong,
// and only this layer knows what to type about it.
type Commands struct {
	// Lab is the lab's --project and --state-dir as the user's command
	// carried them; the default project and an empty StateDir add no flag.
	state.Lab
	// Ran is the user's command after "mltrain" without the lab's flags,
	// as it would be typed again: {"join", "BUNDLE", "--workers", "2"}.
	// Empty reads as {"up"}.
	Ran []string
}

// CommandsFor writes command lines for the lab of project kept in dir:
// --state-dir is named only where dir is not the project's default.
func CommandsFor(project string, dir state.Dir) Commands {
	c := Commands{Lab: state.Lab{Project: project}}
	if dir != "" && dir != state.DefaultDir(project) {
		c.StateDir = dir.Path()
	}
	return c
}

// Line is the command line that runs words on this lab: the lab's flags
// follow "mltrain", so every line acts on the same lab as the user's.
func (c Commands) Line(words ...string) string {
	all := []string{"mltrain"}
	if c.Project != "" && c.Project != service.DefaultProject && service.CheckProject(c.Project) == nil {
		all = append(all, "--project", ShellWord(c.Project))
	}
	if c.StateDir != "" {
		all = append(all, "--state-dir", ShellWord(c.StateDir))
	}
	for _, w := range words {
		all = append(all, ShellWord(w))
	}
	return strings.Join(all, " ")
}

// Again is the user's command, to run again.
func (c Commands) Again() string {
	if len(c.Ran) == 0 {
		return c.Line("up")
	}
	return c.Line(c.Ran...)
}

// AgainWith is the user's command with flag set to value.
func (c Commands) AgainWith(flag, value string) string {
	ran := slices.Clone(c.Ran)
	if len(ran) == 0 {
		ran = []string{"up"}
	}
	if i := slices.Index(ran, flag); i >= 0 && i+1 < len(ran) {
		ran[i+1] = value
	} else {
		ran = append(ran, flag, value)
	}
	return c.Line(ran...)
}

// troubleshooter is a container failure that says how to look into it.
type troubleshooter interface{ Troubleshoot() string }

// Hint is the next step for err: its own hint when it carries one, else
// the one for what went wrong below lab/, else "".
func (c Commands) Hint(err error) string {
	if err == nil {
		return ""
	}
	if h := clierr.HintWith(err, c.Line); h != "" {
		return h
	}
	var (
		ts  troubleshooter
		ue  *images.UnavailableError
		be  *images.BuildError
		bad *images.CorruptArchiveError
	)
	switch {
	case errors.As(err, &ts):
		return ts.Troubleshoot() + ", fix the cause, then run '" + c.Again() + "' again (or '" + c.Line("status") + "')"
	case errors.As(err, &ue):
		return PreloadHint(ue, "")
	case errors.As(err, &be):
		if be.LabImage {
			return "the build downloads from the package sources its Dockerfile names; fix the cause above and run '" + c.Again() + "' again, " +
				"or load prebuilt images: 'mltrain images load FILE' (made by 'mltrain images save FILE' on a node that has them)"
		}
		return "fix the failing step, then run '" + c.Again() + "' again"
	case errors.As(err, &bad):
		return "make the archive again with 'mltrain images save FILE' on a node that has the images, and copy it completely"
	}
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.hint(c)
		}
	}
	return ""
}

// kinds are the sentinels of compose/ and internal/ and their next steps.
var kinds = []struct {
	kind error
	hint func(c Commands) string
}{
	{ready.ErrNotReady, func(c Commands) string {
		return "run '" + c.Line("status") + "' and '" + c.Line("logs", "SERVICE") + "' to see why; '" +
			c.AgainWith("--timeout", "20m") + "' if the node is just slow"
	}},
	{compose.ErrNotRendered, func(c Commands) string {
		return "run '" + c.Line("render") + "' (or '" + c.Line("up") + "') to write it"
	}},
	{compose.ErrImageMissing, func(c Commands) string {
		return "run 'mltrain build' (lab images) or 'mltrain images load FILE' (preloaded images), then '" + c.Again() + "' again"
	}},
	{compose.ErrPortTaken, func(c Commands) string {
		return "run '" + c.Line("doctor") + "' to see which container or process holds it, stop that, then '" + c.Again() + "'"
	}},
	{compose.ErrNoGPURuntime, func(c Commands) string {
		return "run '" + c.Line("doctor") + "' (NVIDIA: 'sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker')"
	}},
	{images.ErrNothingToSave, func(c Commands) string {
		return "run 'mltrain build' (and '" + c.Line("up") + "' for the external images) on this node first, or save on a node that has them"
	}},
	{images.ErrBadArchive, func(Commands) string {
		return "make the archive again with 'mltrain images save FILE' on a node that has the images"
	}},
	{images.ErrNoArchive, func(Commands) string { return "give the path of a file made by 'mltrain images save FILE'" }},
	{store.ErrNoEndpoint, func(c Commands) string { return "pass --minio-endpoint host:9000 or run '" + c.Line("up") + "'" }},
	{store.ErrNoCredentials, func(c Commands) string {
		return "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to the lab's MinIO credentials ('" + c.Line("up") + "' printed them)"
	}},
	{store.ErrUnreachable, func(c Commands) string { return "run '" + c.Line("status") + "' to see whether minio is up" }},
	{store.ErrCredentialsRefused, func(c Commands) string {
		return "use the lab's MinIO credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, printed by '" + c.Line("up") + "')"
	}},
	{store.ErrRootRefused, func(c Commands) string {
		return "MinIO runs with other root credentials than the lab's credentials.json: remove MINIO_ROOT_USER/MINIO_ROOT_PASSWORD from compose.override.yaml, then '" + c.Line("up") + "'"
	}},
	{store.ErrNoAdmin, func(c Commands) string { return "run '" + c.Line("up") + "'" }},
	{ray.ErrNoAddress, func(c Commands) string {
		return "set RAY_ADDRESS=http://<head>:8265 or pass --ray-address, or run '" + c.Line("up") + "' first"
	}},
	{ray.ErrUnreachable, func(c Commands) string {
		return "run '" + c.Line("status") + "' to see whether the Ray head is up (or check RAY_ADDRESS)"
	}},
	{ray.ErrAuthMissing, func(c Commands) string {
		return "export RAY_AUTH_TOKEN=<the Ray token '" + c.Line("up") + "' printed> (or pass --ray-token)"
	}},
	{ray.ErrAuthInvalid, func(c Commands) string {
		return "use the lab's Ray token: '" + c.Line("status") + "' shows where it is kept; fix RAY_AUTH_TOKEN or --ray-token"
	}},
}

// PreloadHint is how to have images this host could not get, with alt
// (another way, such as flags naming images already here) when not empty.
func PreloadHint(e *images.UnavailableError, alt string) string {
	const preload = "preload the images: 'mltrain images load FILE' (after 'mltrain images save FILE' on a node that has them)"
	h := preload
	if e.Policy == images.PullNever {
		h = "run again with --pull missing, or " + preload
	}
	if alt != "" {
		h += ", or " + alt
	}
	return h + ", then run again"
}

// shellSafe are the characters a shell word needs no quotes for.
const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,"

// ShellWord quotes s for a shell when it needs it.
func ShellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune(shellSafe, r) }) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`
}
