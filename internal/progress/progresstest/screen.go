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

// Screen replays out on a terminal of unbounded width and returns the lines
// it keeps, and how many redraws it saw. It models what a redraw does to
// text that is not the live view's, such as the "^C" a terminal echoes: the
// cursor moves up N rows keeping its column, and the screen is erased from
// there. "\n" and "\r\n" start a new line, "\r" returns to its start, the
// cursor show/hide sequences are dropped, and any other escape sequence is
// kept as text for the caller to notice.
func Screen(out string) (lines []string, redraws int) {
	out = strings.NewReplacer("\x1b[?25l", "", "\x1b[?25h", "").Replace(out)
	screen := [][]rune{nil}
	row, col := 0, 0
	write := func(text string) {
		for _, r := range text {
			switch r {
			case '\n':
				row, col = row+1, 0
				if row == len(screen) {
					screen = append(screen, nil)
				}
			case '\r':
				col = 0
			default:
				line := screen[row]
				for len(line) < col {
					line = append(line, ' ')
				}
				if col < len(line) {
					line[col] = r
				} else {
					line = append(line, r)
				}
				screen[row], col = line, col+1
			}
		}
	}
	for {
		m := Redraw.FindStringSubmatchIndex(out)
		if m == nil {
			write(out)
			break
		}
		write(out[:m[0]])
		n, _ := strconv.Atoi(out[m[2]:m[3]])
		row = max(row-n, 0)
		screen = screen[:row+1]
		screen[row] = screen[row][:min(col, len(screen[row]))]
		redraws++
		out = out[m[1]:]
	}
	if len(screen[len(screen)-1]) == 0 {
		screen = screen[:len(screen)-1] // the cursor's empty line after the last newline
	}
	lines = make([]string, len(screen))
	for i, l := range screen {
		lines[i] = string(l)
	}
	return lines, redraws
}
