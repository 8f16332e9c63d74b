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
	colorReset  = "\x1b[0m"
	colorGreen  = "\x1b[32m"
	colorRed    = "\x1b[31m"
	colorYellow = "\x1b[33m"
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
	pad := func(s string, width int) string {
		return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
	}
	paint := func(s, c string) string {
		if !color {
			return s
		}
		return c + s + colorReset
	}
	cells := make([][]string, len(r.Hosts))
	widths := make([]int, len(groups))
	for i, n := range r.Hosts {
		var tally map[string]verify.GroupTally
		if n.Report != nil {
			tally = n.Report.Tally()
		}
		for j, g := range groups {
			cells[i] = append(cells[i], tally[g].Cell())
			widths[j] = max(widths[j], len(g), len(cells[i][j]))
		}
	}
	var row strings.Builder
	endRow := func() {
		b.WriteString(strings.TrimRight(row.String(), " ") + "\n")
		row.Reset()
	}
	row.WriteString(pad("HOST", hostW) + "  " + pad("STATE", stateW))
	for j, g := range groups {
		row.WriteString("  " + pad(g, widths[j]))
	}
	endRow()
	for i, n := range r.Hosts {
		c := colorRed
		switch n.State {
		case Passed:
			c = colorGreen
		case Rehearsed:
			c = colorYellow
		}
		row.WriteString(pad(n.Name(), hostW) + "  " + paint(n.State, c) + strings.Repeat(" ", stateW-len(n.State)))
		for j, c := range cells[i] {
			row.WriteString("  ")
			switch {
			case strings.HasPrefix(c, "FAIL"):
				row.WriteString(paint(c, colorRed))
			case c == "ok":
				row.WriteString(paint(c, colorGreen))
			default:
				row.WriteString(c)
			}
			row.WriteString(strings.Repeat(" ", widths[j]-len(c)))
		}
		endRow()
	}
	var why strings.Builder
	for _, n := range r.Hosts {
		if n.State == Passed {
			continue
		}
		name := n.Name()
		if name != n.Host {
			name += " (" + n.Host + ")"
		}
		fmt.Fprintf(&why, "%s: %s\n", name, oneLine(n.Detail))
		if n.Fix != "" {
			fmt.Fprintf(&why, "  fix: %s\n", oneLine(n.Fix))
		}
	}
	if why.Len() > 0 {
		b.WriteString("\n" + why.String())
	}
	if r.States[Failed] > 0 {
		b.WriteString("\nEach failed check's evidence and fix: run again with --html FILE (one page) or --json.\n")
	}
	var counts []string
	for _, s := range States {
		if r.States[s] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", r.States[s], s))
		}
	}
	verdict := "every host is verified"
	if r.States[Rehearsed] > 0 {
		verdict += fmt.Sprintf(", %d only as a rehearsal (its exercises ran under conditions)", r.States[Rehearsed])
	}
	if !r.OK {
		verdict = "NOT every host is verified"
	}
	fmt.Fprintf(&b, "\n%d hosts in %.1fs: %s: %s\n", len(r.Hosts), r.Seconds, strings.Join(counts, ", "), verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteJUnit writes the report as JUnit XML, one testsuite per host.
func (r Report) WriteJUnit(w io.Writer) error {
	return verify.WriteNodesJUnit(w, "mltrain fleet verify", r.Hosts)
}

// WriteHTML writes the report as one self-contained HTML page.
func (r Report) WriteHTML(w io.Writer) error {
	return verify.WriteHTML(w, "mltrain fleet verify", r.Hosts, r.Started)
}
