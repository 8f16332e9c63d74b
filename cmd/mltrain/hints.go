package main

import (
	"regexp"
	"strings"

	"github.com/mltrain/mltrain/lab"
)

// labCommands read --project or --state-dir: a next step naming one of them
// must carry the lab's non-default flags, or it would act on the default lab.
var labCommands = []string{"up", "down", "status", "logs", "worker", "lab", "verify", "render", "credentials", "data", "doctor"}

// mltrainCommand finds "mltrain <lab command>" in prose: at the start, or
// after a space, a quote, a backtick or a parenthesis (never inside a name
// such as mltrain-ray-head or ~/.mltrain/mltrain).
var mltrainCommand = regexp.MustCompile("(^|[\\s'\"`(])mltrain +(" + strings.Join(labCommands, "|") + `)\b`)

// commandEnd ends a command inside prose: a closing quote, a separator, a
// parenthesis, a line break.
const commandEnd = "'\"`;()\n&|"

// labArgs are the global flags that choose this lab, as a command line
// carries them; empty for the default lab. An invalid --project is not
// carried (its own error says so).
func (a *app) labArgs() string {
	var words []string
	if a.project != lab.DefaultProject && lab.CheckProject(a.project) == nil {
		words = append(words, "--project", shellWord(a.project))
	}
	if a.stateDir != "" {
		words = append(words, "--state-dir", shellWord(a.stateDir))
	}
	return strings.Join(words, " ")
}

// next is the one place a next step is written for the user: every
// 'mltrain <command>' in text gets the lab's non-default --project and
// --state-dir, right after "mltrain", unless that command already names one.
// Errors' Next lines, verify's fix column and the commands' own "Next:"
// lines all pass through it.
func (a *app) next(text string) string {
	flags := a.labArgs()
	if flags == "" || text == "" {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range mltrainCommand.FindAllStringSubmatchIndex(text, -1) {
		at := m[2*2] // where the command word starts
		rest := text[at:]
		if i := strings.IndexAny(rest, commandEnd); i >= 0 {
			rest = rest[:i]
		}
		if strings.Contains(rest, "--project") || strings.Contains(rest, "--state-dir") {
			continue
		}
		b.WriteString(text[last:at])
		b.WriteString(flags + " ")
		last = at
	}
	b.WriteString(text[last:])
	return b.String()
}

// shellWord quotes s for a shell when it needs it, as rerunLine does.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune(shellSafe, r) }) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(s) + `"`
}
