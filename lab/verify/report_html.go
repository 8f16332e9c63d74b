package verify

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

// The page is one file an instructor can mail, archive or print: its style is
// inline, it has no script, and its Content-Security-Policy forbids fetching
// anything, so a browser shows it the same offline and years later.
//
//go:embed report.html.tmpl
var pageSource string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"cell":    groupCell,
	"status":  func(s Status) string { return string(s) },
	"upper":   func(s Status) string { return strings.ToUpper(string(s)) },
	"open":    func(s Status) bool { return s == Fail },
	"seconds": func(f float64) string { return fmt.Sprintf("%.1f s", f) },
	"mode":    modeName,
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"stateClass": func(s string) string {
		switch s {
		case NodePassed, NodeRehearsed:
			return s
		}
		return "other"
	},
}).Parse(pageSource))

// cellView is one host x group cell of the matrix.
type cellView struct {
	Class, Text, Title string
}

func groupCell(t map[string]GroupTally, group string) cellView {
	g, ok := t[group]
	switch {
	case !ok || !g.Ran():
		return cellView{Class: "none", Text: "–", Title: "not run"}
	case g.Failed > 0:
		return cellView{Class: "fail", Text: g.Cell(), Title: fmt.Sprintf("%d failed, %d passed, %d skipped", g.Failed, g.Passed, g.Skipped)}
	case g.NA != "":
		return cellView{Class: "none", Text: g.Cell(), Title: fmt.Sprintf("no GPU on this lab: %d passed, %d skipped", g.Passed, g.Skipped)}
	case g.Conditional > 0:
		return cellView{Class: "skip", Text: g.Cell(), Title: fmt.Sprintf("%d passed, %d of them only under conditions", g.Passed, g.Conditional)}
	case g.Passed > 0:
		return cellView{Class: "pass", Text: "ok", Title: fmt.Sprintf("%d passed, %d skipped", g.Passed, g.Skipped)}
	default:
		return cellView{Class: "skip", Text: "skip", Title: fmt.Sprintf("%d skipped", g.Skipped)}
	}
}

type nodeView struct {
	Node
	Anchor string
	Tally  map[string]GroupTally
}

type stateCount struct {
	State string
	Count int
}

type pageView struct {
	Title     string
	Done      string // what a passed node is: "verified"
	Generated string
	Groups    []string
	Nodes     []nodeView
	States    []stateCount
	AllPassed bool
	Rehearsed int
}

// WriteHTML writes one self-contained static page: a matrix of the nodes
// against the check groups, then each node's checks, each with its evidence
// and fix in a <details> (open when it failed). It reads the same printed.
func WriteHTML(w io.Writer, title string, nodes []Node, generated time.Time) error {
	return WriteNodesHTML(w, title, "verified", nodes, generated)
}

// WriteNodesHTML is WriteHTML for nodes that did something else than
// verify ('mltrain fleet backup'): done says what a passed node is
// ("backed up"); nodes without a report show their state and detail.
func WriteNodesHTML(w io.Writer, title, done string, nodes []Node, generated time.Time) error {
	v := pageView{Title: title, Done: done, Generated: generated.UTC().Format("2006-01-02 15:04 UTC"), Groups: NodeGroups(nodes), AllPassed: len(nodes) > 0}
	counts := map[string]int{}
	for i, n := range nodes {
		nv := nodeView{Node: n, Anchor: fmt.Sprintf("node-%d", i+1)}
		if n.Report != nil {
			nv.Tally = n.Report.Tally()
		}
		v.Nodes = append(v.Nodes, nv)
		counts[n.State]++
		v.AllPassed = v.AllPassed && (n.State == NodePassed || n.State == NodeRehearsed)
		if n.State == NodeRehearsed {
			v.Rehearsed++
		}
	}
	for _, s := range sortedStates(counts) {
		v.States = append(v.States, stateCount{s, counts[s]})
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}
