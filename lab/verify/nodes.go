package verify

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Node states a report over nodes shows: a node whose verify ran is passed or
// failed; the others (set by 'mltrain fleet verify') say why no report came.
const (
	NodePassed = "passed"
	NodeFailed = "failed"
	// NodeRehearsed: every check passed, some only under conditions (its
	// exercises ran quick, on fake data, with reduced CPUs or on a CPU
	// rehearsal lab); counted apart from passed.
	NodeRehearsed = "rehearsed"
)

// Node is one node's outcome in a report over several nodes ('mltrain fleet
// verify'), or the one node of 'mltrain verify --html': its verify report
// when one was read, otherwise the state that stopped it and why.
type Node struct {
	Host    string  `json:"host"`            // as the hosts file names it: [user@]address[:port]
	Label   string  `json:"label,omitempty"` // the hosts file's label (a student's name)
	State   string  `json:"state"`           // passed, failed, or why there is no report
	Detail  string  `json:"detail,omitempty"`
	Fix     string  `json:"fix,omitempty"`
	Seconds float64 `json:"seconds"`
	Report  *Report `json:"report,omitempty"`
}

// Name is how reports name the node: its label, else its host.
func (n Node) Name() string {
	if n.Label != "" {
		return n.Label
	}
	return n.Host
}

// SingleNode is the node of a one-host 'mltrain verify' report.
func SingleNode(host string, r Report) Node {
	n := Node{Host: host, State: NodePassed, Seconds: r.Seconds, Report: &r}
	if r.OK && r.Conditional > 0 {
		n.State, n.Detail = NodeRehearsed, "passed, "+r.ConditionsSummary()
	}
	if !r.OK {
		n.State = NodeFailed
		n.Detail = "failed: " + strings.Join(r.FailedIDs(), ", ")
	}
	return n
}

// FailedIDs lists the failed checks' ids in report order.
func (r Report) FailedIDs() []string {
	var ids []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// GroupTally is one group's checks on one node.
type GroupTally struct {
	Passed, Failed, Skipped int
	Conditional             int    // passes under conditions
	NA                      string // why the group does not apply ("rehearsal": GPU checks on a lab without GPUs)
}

// Ran says whether any check of the group ran.
func (g GroupTally) Ran() bool { return g.Passed+g.Failed+g.Skipped > 0 }

// Tally counts a report's checks by group.
func (r Report) Tally() map[string]GroupTally {
	t := map[string]GroupTally{}
	for _, c := range r.Checks {
		g := t[c.Group]
		switch c.Status {
		case Pass:
			g.Passed++
			if len(c.Conditions) > 0 {
				g.Conditional++
			}
		case Fail:
			g.Failed++
		case Skip:
			g.Skipped++
		}
		if c.Group == GroupGPU && r.Mode == plan.ModeCPU {
			g.NA = "rehearsal"
		}
		t[c.Group] = g
	}
	return t
}

// NodeGroups are the groups any node's report has, in report order: the
// columns of a table over nodes.
func NodeGroups(nodes []Node) []string {
	var out []string
	for _, g := range Groups {
		for _, n := range nodes {
			if n.Report != nil && n.Report.Tally()[g].Ran() {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// WriteNodesJUnit writes nodes as JUnit XML, one <testsuite> per node (as
// Ansible's junit callback does per host): a node's checks are its test
// cases; a node without a report has one failed case, "verify", saying why.
func WriteNodesJUnit(w io.Writer, name string, nodes []Node) error {
	out := junitSuites{Name: name}
	var slowest float64 // hosts run in parallel: the slowest is the whole run's time
	for _, n := range nodes {
		s := junitSuite{Name: n.Name(), Time: secs(n.Seconds)}
		class := "mltrain.fleet." + strings.ReplaceAll(n.Name(), ".", "_")
		if n.Report != nil {
			s.Timestamp = n.Report.Started.UTC().Format("2006-01-02T15:04:05")
			for _, c := range n.Report.Checks {
				s.Cases = append(s.Cases, checkCase(c, class+"."+c.Group))
			}
			s.Failures, s.Skipped = n.Report.Failed, n.Report.Skipped
		}
		if n.Report == nil || (n.State != NodePassed && n.Report.Failed == 0) {
			// The node's state is the failure: the report is missing or
			// does not hold what failed (a host that timed out mid-run).
			text := n.Detail
			if n.Fix != "" {
				text += "\nfix: " + n.Fix
			}
			s.Cases = append(s.Cases, junitCase{Name: "verify", Classname: class, Time: secs(n.Seconds),
				Failure: &junitMessage{Message: n.State + ": " + n.Detail, Type: n.State, Text: text}})
			s.Failures++
		}
		s.Tests = len(s.Cases)
		out.Suites = append(out.Suites, s)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
		slowest = max(slowest, n.Seconds)
	}
	out.Time = secs(slowest)
	return writeJUnitXML(w, out)
}

func checkCase(c Check, class string) junitCase {
	tc := junitCase{Name: c.ID + ": " + c.Title, Classname: class, Time: secs(c.Seconds), SystemOut: c.Evidence}
	if len(c.Conditions) > 0 {
		tc.Name += " [" + strings.Join(c.Conditions, ", ") + "]"
		tc.SystemOut = c.conditionsNote() + c.Evidence
	}
	switch c.Status {
	case Fail:
		text := c.Evidence
		if c.Fix != "" {
			text += "\nfix: " + c.Fix
		}
		tc.Failure = &junitMessage{Message: c.Evidence, Type: "fail", Text: text}
	case Skip:
		tc.Skipped = &junitMessage{Message: c.Evidence}
	}
	return tc
}

func writeJUnitXML(w io.Writer, out junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// sortedStates lists the states present: passed, failed, then the others
// by name.
func sortedStates(counts map[string]int) []string {
	rank := func(s string) int {
		switch s {
		case NodePassed:
			return 0
		case NodeRehearsed:
			return 1
		case NodeFailed:
			return 2
		}
		return 3
	}
	var out []string
	for s := range counts {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// ReasonNoLab is Failure.Reason when the state dir holds no lab.
const ReasonNoLab = "no-lab"

// Failure is what 'mltrain verify --json' prints instead of a report when it
// cannot verify at all (no lab, no engine), so a reader of its output always
// gets JSON: OK is false, Error the message, Next the command to run.
type Failure struct {
	Project string `json:"project,omitempty"`
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Next    string `json:"next,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// NewFailure describes err; next is its hint as the command layer words it.
func NewFailure(err error, next string) Failure {
	f := Failure{Error: err.Error(), Next: next}
	if errors.Is(err, state.ErrNoLab) {
		f.Reason = ReasonNoLab
	}
	return f
}

// ConditionsSummary says under which conditions the report's conditional
// passes were earned: "3 checks only under conditions: quick, CPU rehearsal".
func (r Report) ConditionsSummary() string {
	var all []string
	for _, c := range r.Checks {
		for _, k := range c.Conditions {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	return fmt.Sprintf("%d check(s) only under conditions: %s", r.Conditional, strings.Join(all, ", "))
}

// Cell is a group's column on a node's row: ok, FAIL n, skip, - (not run),
// "ok, rehearsed" for passes under conditions, or n/a (why) where the group
// does not apply.
func (g GroupTally) Cell() string {
	switch {
	case g.Failed > 0:
		return fmt.Sprintf("FAIL %d", g.Failed)
	case g.NA != "":
		return "n/a (" + g.NA + ")"
	case g.Conditional > 0:
		return "ok, rehearsed"
	case g.Passed > 0:
		return "ok"
	case g.Skipped > 0:
		return "skip"
	}
	return "-"
}
