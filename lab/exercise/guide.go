package exercise

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mltrain/mltrain/lab/nextstep"
)

// Spec describes an exercise to the student: what the lesson teaches, what
// should be seen, and where to look. The guide and each run's record are
// built from it.
type Spec struct {
	Name     string   `json:"name"`
	Title    string   `json:"title"`
	Lesson   string   `json:"lesson"`
	Expected string   `json:"expected"`
	Look     []string `json:"look"`    // what to open in the dashboard
	ByHand   string   `json:"by_hand"` // the same thing with the Ray CLI, from Jupyter
}

// Guide is the whole guided lab as text, for `mltrain lab guide`; the
// commands it names are c's, so they act on the lab the user chose.
func Guide(c nextstep.Commands, dashboard string) string {
	if dashboard == "" {
		dashboard = "the Ray dashboard (" + c.Line("status") + " shows its URL)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The mltrain Ray lab: %s exercises. Run each with `%s <name>`, or by hand from a\n", count(len(registry)), c.Line("lab"))
	b.WriteString("Jupyter terminal in the workspace (RAY_ADDRESS and RAY_AUTH_TOKEN are set there).\n")
	fmt.Fprintf(&b, "Keep %s open while they run.\n", dashboard)
	fmt.Fprintf(&b, "Add --quick for a rehearsal of a few batches per epoch; `%s` runs them all.\n", c.Line("lab", "all", "--quick"))
	for i, s := range Specs(c) {
		fmt.Fprintf(&b, "\n%d. %s  (%s)\n", i+1, s.Title, c.Line("lab", s.Name))
		fmt.Fprintf(&b, "   Why: %s\n", s.Lesson)
		fmt.Fprintf(&b, "   Expect: %s\n", s.Expected)
		for _, l := range s.Look {
			fmt.Fprintf(&b, "   Look: %s\n", l)
		}
		fmt.Fprintf(&b, "   By hand: %s\n", s.ByHand)
	}
	fmt.Fprintf(&b, "\nAfterwards `%s` checks every step from the records the exercises left.\n", c.Line("verify"))
	// Last, because the node is wiped when its lease ends.
	fmt.Fprintf(&b, "\nLast, back up before the node's lease ends (the node is wiped then): `%s`\n", BackupLine(c))
	fmt.Fprintf(&b, "saves the lab's work; copy the file off the node, and `%s` brings it back on a new\n", c.Line("restore", "FILE"))
	fmt.Fprintf(&b, "one. `%s` shows the time left.\n", c.Line("lease"))
	return b.String()
}

// BackupDest is where the lab's reminders tell to save its work before the
// node's lease ends.
const BackupDest = "~/lab-backup.tar.gz"

// BackupLine is the command line that saves the lab's work to BackupDest,
// the ~ left for the shell to expand.
func BackupLine(c nextstep.Commands) string { return c.Line("backup") + " " + BackupDest }

// Text renders a record for the terminal: verdict, what to look at, numbers.
func (rec Record) Text() string {
	var b strings.Builder
	verdict := "OK"
	if !rec.OK {
		verdict = "NOT OBSERVED"
		if rec.Error != "" && len(rec.Problems) == 0 {
			verdict = "FAILED"
		}
	}
	if c := rec.Conditions(); len(c) > 0 {
		verdict += " (" + strings.Join(c, ", ") + ")"
	}
	fmt.Fprintf(&b, "%s: %s\n", rec.Exercise, verdict)
	if s := rec.Sizing; s != nil && s.Why != "" {
		fmt.Fprintf(&b, "  sizing: %s\n", s.Why)
	}
	if rec.Expected != "" {
		fmt.Fprintf(&b, "  expected: %s\n", rec.Expected)
	}
	if rec.Observed != "" {
		fmt.Fprintf(&b, "  observed: %s\n", rec.Observed)
	}
	for _, l := range rec.Look {
		fmt.Fprintf(&b, "  look: %s\n", l)
	}
	for _, n := range rec.Numbers {
		fmt.Fprintf(&b, "  %-34s %10.1f %s\n", n.Name, n.Value, n.Unit)
	}
	for _, j := range rec.Jobs {
		where := "" // a job that never ran (infeasible's) was nowhere
		if j.reported() {
			where = j.Where()
		}
		fmt.Fprintf(&b, "  job %s  %s  %.0fs  %s\n", j.SubmissionID, j.Status, j.Seconds, where)
	}
	for _, p := range rec.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}

// count spells a small number out, as the guide's prose does.
func count(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}

// Summary is lab all's last line: "6 of 6 passed in 4m12s", with the
// conditions the passes were earned under.
func Summary(recs []Record, took time.Duration) string {
	ok := 0
	var conds []string
	for _, r := range recs {
		if !r.OK {
			continue
		}
		ok++
		for _, c := range r.Conditions() {
			if strings.Contains(c, "CPUs of the course's") {
				c = "CPUs fitted to the lab" // each exercise's own numbers are in its record
			}
			if !slices.Contains(conds, c) {
				conds = append(conds, c)
			}
		}
	}
	s := fmt.Sprintf("%d of %d passed in %s", ok, len(Names()), took.Round(time.Second))
	if len(conds) > 0 {
		s += " (under conditions: " + strings.Join(conds, ", ") + ")"
	}
	return s
}
