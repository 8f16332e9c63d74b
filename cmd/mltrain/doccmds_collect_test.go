package main

// Every command the lab shows a person, collected: the markdown pages'
// shell blocks and inline code, `mltrain lab guide` (each exercise's by-hand
// line among it), and the next steps mltrain's errors name. The checks are in
// doccmds_check_test.go, the runs on a stand-in lab in doccmds_run_test.go.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// docPages are the pages a person reads, from this package: the README,
// the workspace's, and every page of docs/ but the maintainers' tables
// (notDocPages), so a new page is checked the day it is written.
func docPages() ([]string, error) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		return nil, err
	}
	pages = slices.DeleteFunc(pages, func(p string) bool { return notDocPages[filepath.Base(p)] })
	return append([]string{"../../README.md", "../../workspace/README.md"}, pages...), nil
}

// notDocPages name Ray's and the packages' facts (sources and tests), not
// commands to type.
var notDocPages = map[string]bool{"ray-fidelity.md": true, "packages.md": true}

// docCmd is one simple command as a person is shown it, placeholders
// substituted: its words, shell quotes removed.
type docCmd struct {
	where string // page:line, or the source it came from
	text  string // the line as shown
	words []string
	// mention: inline code in prose ("run `mltrain lab`"), which may name
	// a command without its arguments; a line in a shell block may not.
	mention bool
}

// inlinePrograms are the first words that make inline code a command;
// in a shell block every line is one.
var inlinePrograms = []string{"mltrain", "docker", "curl", "ray", "python", "python3", "make", "sudo", "go",
	"ssh-keygen", "ssh-add", "nvidia-smi", "rocm-smi"}

// shellLangs are the fences whose lines are typed into a shell.
var shellLangs = []string{"", "sh", "bash", "shell", "console"}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// quotedCmd is a command a hint or a by-hand text names in single quotes.
var quotedCmd = regexp.MustCompile(`'((?:mltrain|docker|ray|sudo|make) [^']*)'`)

// placeholders are the words the pages write for what the reader fills in,
// and what the checks put there: the one table of them. Longer ones first
// (they are replaced in this order).
var placeholders = [][2]string{
	{"<submission id>", "raysubmit_doccheck"},
	{"ray-worker-N", "ray-worker-1"},
	{"<name>", "submit"},
	{"<exercise>", "submit"},
	{"<project>", "mltrain"},
	{"<other host>", "192.0.2.2"},
	{"<host>", "127.0.0.1"},
	{"<bundle>", "BUNDLE"},
	{"<id>", "raysubmit_doccheck"},
	{"<head>", "127.0.0.1"},
}

// wordPlaceholders are whole words in capitals that stand for a value.
var wordPlaceholders = map[string]string{
	"N":       "1",
	"FILE":    "lab-images.tar",
	"SERVICE": "ray-head",
	"URL":     "http://127.0.0.1:9/food11.zip",
	"DIR":     "render-out",
	"HOSTS":   "hosts.txt",
	"GROUP":   "ray",
	"BUNDLE":  "mltrain-join-v1.doccheck",
	"NAME":    "mltrain2",
	"PATH":    "/usr/local/bin/mltrain",
}

// fillPlaceholders puts the checks' values in s's placeholders.
func fillPlaceholders(s string) string {
	for _, p := range placeholders {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}

// fillWords replaces the word placeholders among words.
func fillWords(words []string) []string {
	out := slices.Clone(words)
	for i, w := range out {
		if v, ok := wordPlaceholders[w]; ok {
			out[i] = v
		} else if k, v, ok := strings.Cut(w, "="); ok && wordPlaceholders[v] != "" { // --port NAME=N, --x=FILE
			out[i] = k + "=" + wordPlaceholders[v]
		}
	}
	return out
}

// collectMarkdown is every command of a markdown page: each line of its
// shell blocks (continuations joined, comments' inline code as mentions)
// and each inline code span of its prose that starts with a program.
func collectMarkdown(page, text string) []docCmd {
	var out []docCmd
	lines := strings.Split(text, "\n")
	fence, lang := false, ""
	for i := 0; i < len(lines); i++ {
		line, where := lines[i], page+":"+strconv.Itoa(i+1)
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			fence, lang = !fence, strings.TrimPrefix(t, "```")
			continue
		}
		if fence && !slices.Contains(shellLangs, lang) {
			continue
		}
		if !fence {
			out = append(out, mentions(where, line)...)
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		code, comment := cutComment(line)
		out = append(out, mentions(where, comment)...)
		out = append(out, commands(where, code, false)...)
	}
	return out
}

// mentions are the commands among prose's inline code and single quotes.
func mentions(where, prose string) []docCmd {
	var out []docCmd
	for _, m := range inlineCode.FindAllStringSubmatch(prose, -1) {
		code := strings.ReplaceAll(m[1], `\|`, "|")
		// a bare name (bucket `ray`) is not a command
		if first, rest, _ := strings.Cut(code, " "); slices.Contains(inlinePrograms, first) && rest != "" {
			out = append(out, commands(where, code, true)...)
		}
	}
	for _, m := range quotedCmd.FindAllStringSubmatch(inlineCode.ReplaceAllString(prose, ""), -1) {
		out = append(out, commands(where, m[1], true)...)
	}
	return out
}

// collectText is the commands of text a command prints (the guide, a
// hint): lines that start with a program, by-hand lines, and the commands
// its prose names in backquotes, single quotes or parentheses.
func collectText(where, text string) []docCmd {
	var out []docCmd
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "By hand: "); ok {
			for _, part := range strings.Split(rest, "; ") {
				// "three times: ray job submit ...", "afterwards: mltrain worker start N"
				if _, after, ok := strings.Cut(part, ": "); ok && startsWithProgram(after) {
					part = after
				}
				if startsWithProgram(part) {
					out = append(out, commands(where, part, false)...)
				} else {
					out = append(out, mentions(where, part)...)
				}
			}
			continue
		}
		out = append(out, mentions(where, line)...)
		for _, m := range parenCmd.FindAllStringSubmatch(line, -1) {
			out = append(out, commands(where, m[1], false)...)
		}
	}
	return out
}

// parenCmd is a command the guide names in parentheses: "(mltrain lab submit)".
// It ends the line; prose in parentheses ("(mltrain status shows its URL)")
// does not.
var parenCmd = regexp.MustCompile(`\((mltrain [^()]*)\)$`)

func startsWithProgram(s string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return slices.Contains(inlinePrograms, first)
}

// commands splits a shell line into its simple commands, each synopsis
// expanded into the lines it stands for, placeholders filled.
func commands(where, line string, mention bool) []docCmd {
	var out []docCmd
	for _, simple := range splitShell(fillPlaceholders(line)) {
		for _, variant := range expandSynopsis(simple) {
			words := fillWords(variant)
			if i := slices.Index(words, ">"); i >= 0 { // a redirection is the shell's
				words = words[:i]
			}
			for len(words) > 0 && isAssignment(words[0]) { // MLTRAIN_VERSION=v0.1.0 sh
				words = words[1:]
			}
			if len(words) > 0 && slices.Contains([]string{"do", "then", "else"}, words[0]) {
				words = words[1:]
			}
			if len(words) == 0 || slices.Contains([]string{"for", "done", "fi", "if", "while"}, words[0]) {
				continue
			}
			out = append(out, docCmd{where: where, text: strings.TrimSpace(line), words: words, mention: mention})
		}
	}
	return out
}

var assignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

func isAssignment(w string) bool { return assignment.MatchString(w) }

// cutComment splits a shell line at its comment (a # starting a word,
// outside quotes).
func cutComment(line string) (code, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' '):
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}

// splitShell splits line at ; && || and pipes, outside quotes and
// outside a synopsis's brackets (where | separates alternatives); a |
// inside a word ("stop|start") is an alternative, not a pipe.
func splitShell(line string) []string {
	var out []string
	var quote rune
	depth, start := 0, 0
	rs := []rune(line)
	cut := func(i, skip int) {
		out = append(out, string(rs[start:i]))
		start = i + skip
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth > 0:
		case r == ';':
			cut(i, 1)
		case (r == '&' || r == '|') && i+1 < len(rs) && rs[i+1] == r:
			cut(i, 2)
			i++
		case r == '|' && (i == 0 || rs[i-1] == ' ') && (i+1 == len(rs) || rs[i+1] == ' '):
			cut(i, 1)
		}
	}
	out = append(out, string(rs[start:]))
	return out
}

// expandSynopsis is every command line a synopsis stands for: [x] is x or
// nothing, [a | b] one of them, a|b inside a word either word. A plain
// line is itself. Words come out with their shell quotes removed.
func expandSynopsis(s string) [][]string {
	toks := synTokens(s)
	i := 0
	var alt func() [][]string
	seq := func() [][]string {
		res := [][]string{nil}
		for i < len(toks) && toks[i] != "]" && toks[i] != "|" {
			var opts [][]string
			if toks[i] == "[" {
				i++
				opts = append([][]string{nil}, alt()...)
				i++ // the ]
			} else {
				for _, w := range splitAlternatives(toks[i]) {
					opts = append(opts, []string{unquote(w)})
				}
				i++
			}
			var next [][]string
			for _, r := range res {
				for _, o := range opts {
					next = append(next, append(slices.Clone(r), o...))
				}
			}
			res = next
		}
		return res
	}
	alt = func() [][]string {
		res := seq()
		for i < len(toks) && toks[i] == "|" {
			i++
			res = append(res, seq()...)
		}
		return res
	}
	return alt()
}

// synTokens are s's words and the synopsis's [ ] | (outside quotes);
// inside brackets | always separates alternatives ("[--data-url
// URL|--data-zip FILE]"), outside them it joins words ("stop|start").
func synTokens(s string) []string {
	var toks []string
	var cur strings.Builder
	var quote rune
	depth := 0
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch {
		case quote != 0:
			cur.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == ' ' || r == '\t':
			flush()
		case r == '[' || r == ']':
			flush()
			toks = append(toks, string(r))
			if r == '[' {
				depth++
			} else {
				depth--
			}
		case r == '|' && depth > 0:
			flush()
			toks = append(toks, "|")
		case r == '|' && cur.Len() == 0:
			toks = append(toks, "|")
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return toks
}

// splitAlternatives splits a word at | outside quotes.
func splitAlternatives(w string) []string {
	if strings.ContainsAny(w, `'"`) {
		return []string{w}
	}
	return strings.Split(w, "|")
}

// unquote removes a word's shell quotes.
func unquote(w string) string {
	var b strings.Builder
	var quote rune
	for _, r := range w {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// readPages are docPages' commands.
func readPages() ([]docCmd, error) {
	pages, err := docPages()
	if err != nil {
		return nil, err
	}
	var out []docCmd
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, collectMarkdown(strings.TrimPrefix(p, "../../"), string(b))...)
	}
	return out, nil
}
