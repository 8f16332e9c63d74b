package status

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
)

// ErrServicesDown is returned (wrapped) by Err when planned services have a
// container that is not running.
var ErrServicesDown = errors.New("planned services are not running")

// findNotRunning lists the planned services whose container is not running,
// whatever its state: a created, exited, paused or restarting container
// serves no more than a missing one. Without a plan every container of the
// lab counts.
func (st *Status) findNotRunning() {
	planned := map[string]bool{}
	for _, s := range st.Planned {
		planned[s] = true
	}
	for _, s := range st.Services {
		if s.State == "running" || (len(st.Planned) > 0 && !planned[s.Service]) {
			continue
		}
		st.NotRunning = append(st.NotRunning, s.Service)
		if s.WorkerIndex == nil { // a worker's own next command comes with its Ray note
			st.Notes = append(st.Notes, fmt.Sprintf("%s: container %s", s.Service, s.State))
			st.next("up")
		}
	}
}

// Err is status's verdict: nil when every planned service has a running
// container, else an error naming those missing and those not running,
// with the commands that fix them (mltrain up starts every service).
func (st Status) Err() error {
	if st.stateErr != nil {
		return st.stateErr // the planned services cannot be known: never "no lab"
	}
	missing := st.MissingError()
	if len(st.NotRunning) == 0 {
		return missing
	}
	states := make([]string, len(st.NotRunning))
	var starts []string
	others := false
	for i, s := range st.NotRunning {
		row := st.row(s)
		states[i] = fmt.Sprintf("%s (%s)", s, row.State)
		if row.WorkerIndex != nil {
			starts = append(starts, "'"+st.commands.Line("worker", "start", fmt.Sprint(*row.WorkerIndex))+"'")
		} else {
			others = true
		}
	}
	down := fmt.Errorf("%d planned service(s) not running: %s: %w", len(st.NotRunning), strings.Join(states, ", "), ErrServicesDown)
	if missing != nil {
		return clierr.Hintf("run '"+st.commands.Line("up")+"' to create and start them", "%w; %w", missing, down)
	}
	hint := "run '" + st.commands.Line("up") + "' to start them"
	if !others {
		hint = "run " + strings.Join(starts, ", then ")
	}
	return clierr.Hintf(hint, "lab %q: %w", st.Project, down)
}
