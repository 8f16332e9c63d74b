package verify

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// ANSI colours for the table on a terminal.
const (
	colorReset  = "\x1b[0m"
	colorGreen  = "\x1b[32m"
	colorRed    = "\x1b[31m"
	colorYellow = "\x1b[33m"
)

func statusWord(s Status, color bool) string {
	w := strings.ToUpper(string(s))
	if !color {
		return w
	}
	c := map[Status]string{Pass: colorGreen, Fail: colorRed, Skip: colorYellow}[s]
	return c + w + colorReset
}

// WriteTable prints the report for people: one row per check with its
// evidence, the fix under each failed row, and a summary line.
func WriteTable(w io.Writer, r Report, color bool) error {
	// Columns are padded by hand: colour codes take bytes but no width.
	idw := len("CHECK")
	for _, c := range r.Checks {
		idw = max(idw, len(c.ID))
	}
	indent := strings.Repeat(" ", 6+2+idw+2)
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s  %-*s  %s\n", "STATUS", idw, "CHECK", "EVIDENCE")
	for _, c := range r.Checks {
		pad := strings.Repeat(" ", max(0, 6-len(c.Status)))
		fmt.Fprintf(&b, "%s%s  %-*s  %s%s\n", statusWord(c.Status, color), pad, idw, c.ID, c.conditionsNote(), oneLine(c.Evidence))
		if c.Status == Fail && c.Fix != "" {
			fmt.Fprintf(&b, "%sfix: %s\n", indent, oneLine(c.Fix))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	verdict := "every checked step is proven"
	if r.Conditional > 0 {
		verdict += fmt.Sprintf(", %d of them only under conditions (marked): a rehearsal, not the lesson at full size", r.Conditional)
	}
	if !r.OK {
		verdict = "NOT verified: fix the FAIL rows and run '" + r.commands.Line("verify") + "' again"
	}
	scope := ""
	if len(r.Only) > 0 {
		scope = " (only " + strings.Join(r.Only, ", ") + ")"
	}
	_, err := fmt.Fprintf(w, "\nLab %s, mode %s%s: %d passed, %d failed, %d skipped in %.1fs: %s\n",
		r.Project, modeName(r.Mode), scope, r.Passed, r.Failed, r.Skipped, r.Seconds, verdict)
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// JUnit XML, in the shape CI servers and graders' tools read: one
// <testsuite> per group, one <testcase> per check.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func secs(f float64) string { return fmt.Sprintf("%.3f", f) }

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r Report) error {
	out := junitSuites{Name: "mltrain verify " + r.Project, Tests: len(r.Checks), Failures: r.Failed, Skipped: r.Skipped, Time: secs(r.Seconds)}
	idx := map[string]int{}
	for _, c := range r.Checks {
		i, ok := idx[c.Group]
		if !ok {
			i = len(out.Suites)
			idx[c.Group] = i
			out.Suites = append(out.Suites, junitSuite{Name: c.Group, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05")})
		}
		s := &out.Suites[i]
		s.Tests++
		switch c.Status {
		case Fail:
			s.Failures++
		case Skip:
			s.Skipped++
		}
		s.Cases = append(s.Cases, checkCase(c, "mltrain.verify."+c.Group))
	}
	for i := range out.Suites {
		var t float64
		for _, c := range r.Checks {
			if c.Group == out.Suites[i].Name {
				t = max(t, c.Seconds) // checks run concurrently: the slowest is the suite's time
			}
		}
		out.Suites[i].Time = secs(t)
	}
	return writeJUnitXML(w, out)
}

// conditionsNote is "(quick, CPU rehearsal) " before a conditional pass's
// evidence, "" otherwise.
func (c Check) conditionsNote() string {
	if len(c.Conditions) == 0 {
		return ""
	}
	return "(passed under conditions: " + strings.Join(c.Conditions, ", ") + ") "
}
