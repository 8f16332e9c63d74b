package exercise

import (
	"bufio"
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// Markers train.py prints in the job log (see workspace/train.py).
const (
	EventMarker  = "MLTRAIN_EVENT"
	ResultMarker = "MLTRAIN_RESULT"
)

// Event is one MLTRAIN_EVENT line: a worker started (where, on which GPU),
// finished an epoch, had a checkpoint registered with Ray Train, or resumed
// from one (workspace/train.py's docstring is the contract).
type Event struct {
	Event     string  `json:"event"` // start, worker, epoch, checkpoint, resume
	Time      float64 `json:"time"`  // Unix seconds, the worker's clock
	Mode      string  `json:"mode,omitempty"`
	Rank      int     `json:"rank"`
	WorldSize int     `json:"world_size,omitempty"`
	NodeIP    string  `json:"node_ip,omitempty"`
	NodeID    string  `json:"node_id,omitempty"`
	Run       string  `json:"run,omitempty"`
	// Checkpoint is the path Ray reports (checkpoint, resume): on the
	// storage filesystem, "ray/<run>/checkpoint_epoch_000003"; Name its last
	// part.
	Checkpoint string `json:"checkpoint,omitempty"`
	Name       string `json:"name,omitempty"`
	// Epoch is the finished epoch (epoch, checkpoint) or the last one the
	// resumed checkpoint holds (resume); nil when train.py could not tell.
	Epoch *int `json:"epoch,omitempty"`
	// Registered: Ray Train's controller confirmed it holds the checkpoint.
	Registered bool               `json:"registered,omitempty"`
	GPU        map[string]any     `json:"gpu,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
}

// At is the event's time.
func (e Event) At() time.Time {
	return time.Unix(0, int64(e.Time*float64(time.Second)))
}

// How a Tune trial ended (Trial.End), from Tune's own record.
const (
	EndMaxT      = "max_t"     // ran ASHA's max_t iterations
	EndScheduler = "scheduler" // ASHA stopped it
	EndScript    = "script"    // the training function returned on its own before max_t
	EndError     = "error"
)

// Trial is one Tune trial in the result line.
type Trial struct {
	TrialID            string   `json:"trial_id,omitempty"`
	BatchSize          any      `json:"batch_size,omitempty"`
	DropoutProbability *float64 `json:"dropout_probability,omitempty"`
	Iterations         int      `json:"iterations"`
	ValAccuracy        *float64 `json:"val_accuracy,omitempty"`
	ValLoss            *float64 `json:"val_loss,omitempty"`
	Error              string   `json:"error,omitempty"`
	Checkpoint         string   `json:"checkpoint,omitempty"`
	End                string   `json:"end,omitempty"`      // EndMaxT, EndScheduler, EndScript, EndError; "" from an older train.py
	EndFrom            string   `json:"end_from,omitempty"` // where train.py read it: callback, progress_csv, inferred
}

// Result is the MLTRAIN_RESULT line train.py prints at the end.
type Result struct {
	Mode       string         `json:"mode"`
	Run        string         `json:"run"`
	OK         *bool          `json:"ok,omitempty"` // absent in plain mode: reaching the line is success
	Error      string         `json:"error,omitempty"`
	FitSeconds float64        `json:"fit_seconds"`
	Epochs     int            `json:"epochs,omitempty"`
	Metrics    map[string]any `json:"metrics,omitempty"`
	Test       map[string]any `json:"test,omitempty"`
	Checkpoint string         `json:"checkpoint,omitempty"`
	Trials     []Trial        `json:"trials,omitempty"`
	// StoppedEarly is the older summary's count: equal to
	// StoppedByScheduler from train.py's current copy, but every trial
	// shorter than max_t (EarlyStopping's too) from an older one.
	StoppedEarly       int    `json:"stopped_early"`
	StoppedByScheduler *int   `json:"stopped_by_scheduler,omitempty"` // nil from an older train.py
	EndedByScript      *int   `json:"ended_by_script,omitempty"`
	Completed          int    `json:"completed"`
	Errored            int    `json:"errored"`
	MaxT               int    `json:"max_t,omitempty"`
	Best               *Trial `json:"best,omitempty"`
}

// Succeeded reports whether the script said training went well.
func (r *Result) Succeeded() bool {
	if r == nil {
		return false
	}
	if r.OK != nil {
		return *r.OK
	}
	return r.Error == ""
}

// ParseLog finds the event lines and the last result line in a job log.
// Ray prefixes worker output ("(RayTrainWorker pid=…, ip=…) ") and may color
// it or append "[repeated Nx …]": only the JSON value after the marker is read.
func ParseLog(logs string) ([]Event, *Result) {
	var events []Event
	var res *Result
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, EventMarker+" "); i >= 0 {
			var e Event
			if decodeFirst(line[i+len(EventMarker)+1:], &e) && e.Event != "" {
				events = append(events, e)
			}
			continue
		}
		if i := strings.Index(line, ResultMarker+" "); i >= 0 {
			var r Result
			if decodeFirst(line[i+len(ResultMarker)+1:], &r) {
				res = &r
			}
		}
	}
	return events, res
}

func decodeFirst(s string, v any) bool {
	return json.NewDecoder(strings.NewReader(s)).Decode(v) == nil
}

// EventsOf returns the events of one kind, in log order.
func EventsOf(events []Event, kind string) []Event {
	var out []Event
	for _, e := range events {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// NodeIPs lists the distinct node IPs of "worker" events, sorted.
func NodeIPs(events []Event) []string {
	return distinctWorkers(events, func(e Event) string { return e.NodeIP })
}

// distinctWorkers lists the distinct non-empty values of key over the
// "worker" events, sorted.
func distinctWorkers(events []Event, key func(Event) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range EventsOf(events, "worker") {
		if k := key(e); k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// LastLines returns up to n trailing lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// NodeIDs lists the distinct Ray node ids of "worker" events, sorted: what
// tells nodes apart when several share a host's address (nodes that span
// hosts run on the host network).
func NodeIDs(events []Event) []string {
	return distinctWorkers(events, func(e Event) string { return e.NodeID })
}

// nodeKey is the node an event ran on: its id when reported, else its address.
func (e Event) nodeKey() string {
	if e.NodeID != "" {
		return e.NodeID
	}
	return e.NodeIP
}
