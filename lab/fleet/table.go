package fleet

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

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
	cells := make([][]string, len(r.Hosts))
	for i, n := range r.Hosts {
		var tally map[string]verify.GroupTally
		if n.Report != nil {
			tally = n.Report.Tally()
		}
		for _, g := range groups {
			cells[i] = append(cells[i], tally[g].Cell())
		}
	}
	m := matrix{hosts: r.Hosts, cols: groups, cells: cells, states: r.States, seconds: r.Seconds}
	if r.States[Failed] > 0 {
		m.note = "Each failed check's evidence and fix: run again with --html FILE (one page) or --json."
	}
	m.verdict = "every host is verified"
	if r.States[Rehearsed] > 0 {
		m.verdict += fmt.Sprintf(", %d only as a rehearsal (its exercises ran under conditions)", r.States[Rehearsed])
	}
	if !r.OK {
		m.verdict = "NOT every host is verified"
	}
	return m.write(w, color)
}

// WriteBackupTable prints a fleet backup for people: one row per host with
// its state, what its backup holds and sent, and where it went; then why
// each host that did not pass did not, and a summary line.
func WriteBackupTable(w io.Writer, r BackupReport, color bool) error {
	nodes := r.Nodes()
	cells := make([][]string, len(r.Hosts))
	for i, h := range r.Hosts {
		files, size, sent := "-", "-", "-"
		if b := h.Backup; b != nil {
			files, size, sent = fmt.Sprint(b.Files), humanize.IBytes(uint64(b.Bytes)), humanize.IBytes(uint64(b.Sent))
		}
		cells[i] = []string{files, size, sent, h.Target}
	}
	m := matrix{hosts: nodes, cols: []string{"FILES", "SIZE", "SENT", "TO"}, cells: cells, states: r.States, seconds: r.Seconds,
		verdict: "every host is backed up to " + r.Target}
	if !r.OK {
		m.verdict = "NOT every host is backed up"
	}
	return m.write(w, color)
}

// matrix is a table over hosts: a row per host with its state and a cell
// per column, why each host that did not pass did not, a note, a verdict.
type matrix struct {
	hosts         []verify.Node
	cols          []string
	cells         [][]string // per host, per column
	states        map[string]int
	seconds       float64
	note, verdict string
}

func (m matrix) write(w io.Writer, color bool) error {
	hostW, stateW := len("HOST"), len("STATE")
	for _, n := range m.hosts {
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
	widths := make([]int, len(m.cols))
	for j, c := range m.cols {
		widths[j] = len(c)
		for i := range m.hosts {
			widths[j] = max(widths[j], utf8.RuneCountInString(m.cells[i][j]))
		}
	}
	var row strings.Builder
	endRow := func() {
		b.WriteString(strings.TrimRight(row.String(), " ") + "\n")
		row.Reset()
	}
	row.WriteString(pad("HOST", hostW) + "  " + pad("STATE", stateW))
	for j, c := range m.cols {
		row.WriteString("  " + pad(c, widths[j]))
	}
	endRow()
	for i, n := range m.hosts {
		c := colorRed
		switch n.State {
		case Passed:
			c = colorGreen
		case Rehearsed:
			c = colorYellow
		}
		row.WriteString(pad(n.Name(), hostW) + "  " + paint(n.State, c) + strings.Repeat(" ", stateW-len(n.State)))
		for j, c := range m.cells[i] {
			row.WriteString("  ")
			switch {
			case strings.HasPrefix(c, "FAIL"):
				row.WriteString(paint(c, colorRed))
			case c == "ok":
				row.WriteString(paint(c, colorGreen))
			default:
				row.WriteString(c)
			}
			row.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
		}
		endRow()
	}
	var why strings.Builder
	for _, n := range m.hosts {
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
	if m.note != "" {
		b.WriteString("\n" + m.note + "\n")
	}
	var counts []string
	for _, s := range States {
		if m.states[s] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", m.states[s], s))
		}
	}
	fmt.Fprintf(&b, "\n%d hosts in %.1fs: %s: %s\n", len(m.hosts), m.seconds, strings.Join(counts, ", "), m.verdict)
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
