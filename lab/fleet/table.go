package fleet

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mltrain/mltrain/lab/verify"
)

// ANSI colours for the table on a terminal.
const (
	colorReset = "\x1b[0m"
	colorGreen = "\x1b[32m"
	colorRed   = "\x1b[31m"
)

// WriteTable prints the report for people: one row per host with its state
// and a cell per check group (ok, FAIL n, skip, or - when not run), then why
// each host that did not pass did not, with what to do, and a summary line.
func WriteTable(w io.Writer, r Report, color bool) error {
	groups := verify.NodeGroups(r.Hosts)
	hostW, stateW := len("HOST"), len("STATE")
	for _, n := range r.Hosts {
		hostW = max(hostW, utf8.RuneCountInString(n.Name()))
		stateW = max(stateW, len(n.State))
	}
	var b strings.Builder
	// Columns are padded by hand: colour codes take bytes but no width.
	pad := func(s string, width int) string { return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s))) }
	paint := func(s, c string) string {
		if !color {
			return s
		}
		return c + s + colorReset
	}
	b.WriteString(pad("HOST", hostW) + "  " + pad("STATE", stateW))
	for _, g := range groups {
		b.WriteString("  " + g)
	}
	b.WriteString("\n")
	for _, n := range r.Hosts {
		c := colorRed
		if n.State == Passed {
			c = colorGreen
		}
		b.WriteString(pad(n.Name(), hostW) + "  " + paint(n.State, c) + strings.Repeat(" ", stateW-len(n.State)))
		var tally map[string]verify.GroupTally
		if n.Report != nil {
			tally = n.Report.Tally()
		}
		for _, g := range groups {
			t := tally[g]
			cell, c := "-", ""
			switch {
			case t.Failed > 0:
				cell, c = fmt.Sprintf("FAIL %d", t.Failed), colorRed
			case t.Passed > 0:
				cell, c = "ok", colorGreen
			case t.Skipped > 0:
				cell = "skip"
			}
			b.WriteString("  ")
			if c != "" {
				b.WriteString(paint(cell, c))
			} else {
				b.WriteString(cell)
			}
			b.WriteString(strings.Repeat(" ", max(0, len(g)-len(cell))))
		}
		b.WriteString("\n")
	}
	var why strings.Builder
	for _, n := range r.Hosts {
		if n.State == Passed {
			continue
		}
		fmt.Fprintf(&why, "%s (%s): %s\n", n.Name(), n.Host, oneLine(n.Detail))
		if n.Fix != "" {
			fmt.Fprintf(&why, "  fix: %s\n", oneLine(n.Fix))
		}
	}
	if why.Len() > 0 {
		b.WriteString("\n" + why.String())
	}
	var counts []string
	for _, s := range States {
		if r.States[s] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", r.States[s], s))
		}
	}
	verdict := "every host is verified"
	if !r.OK {
		verdict = "NOT every host is verified"
	}
	fmt.Fprintf(&b, "\n%d hosts in %.1fs: %s: %s\n", len(r.Hosts), r.Seconds, strings.Join(counts, ", "), verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
