// Package progresstest reads what progress.TTY wrote to a terminal, for
// tests: which lines a terminal keeps once the live view has redrawn.
package progresstest

import (
	"regexp"
	"strconv"
	"strings"
)

// Redraw matches mpb's redraw: cursor up over the last frame's N rows
// (CSI N A), then erase to the end of the screen (CSI J).
var Redraw = regexp.MustCompile(`\x1b\[(\d+)A\x1b\[J`)

// Screen replays out as a terminal would and returns the lines it keeps,
// and how many redraws it saw. Each redraw removes the last N lines; the
// cursor show/hide sequences are dropped, "\r\n" (a pty's newline) is a
// newline, and any other escape sequence is left in the text for the
// caller to notice. A last line without its newline is kept too.
func Screen(out string) (lines []string, redraws int) {
	out = strings.NewReplacer("\x1b[?25l", "", "\x1b[?25h", "", "\r\n", "\n").Replace(out)
	for {
		m := Redraw.FindStringSubmatchIndex(out)
		text := out
		if m != nil {
			text = out[:m[0]]
		}
		if len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
			text, lines = lines[len(lines)-1]+text, lines[:len(lines)-1]
		}
		lines = append(lines, strings.SplitAfter(text, "\n")...)
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if m == nil {
			break
		}
		n, _ := strconv.Atoi(out[m[2]:m[3]])
		lines = lines[:max(len(lines)-n, 0)]
		redraws++
		out = out[m[1]:]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	return lines, redraws
}
