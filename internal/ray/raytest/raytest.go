// Package raytest is an in-process stand-in for the Ray dashboard's HTTP API,
// built from shared/reference/ray-api.md: the Jobs API (with token auth, the
// 400/404/500 answers Ray gives), package GET/PUT, /api/v0/nodes and
// /api/cluster_status. Job state moves only when a test says so, either
// directly (SetStatus) or from the OnPoll hook (TrainRun plays a
// whole Ray Train run there), so tests are deterministic. Where Ray's timing
// matters to a grade the double keeps it: a job's driver runs on the head
// unless the entrypoint asks for resources, and a node whose raylet stopped
// stays ALIVE until the GCS health checks give up on it (StopNode).
//
// NewModel is the other double: the dashboard served by raymodel, Ray's
// behaviour rather than a script's (a stop of a never-placed job does
// nothing, packages expire, a head restart is a new cluster), the same
// model the stand-in Ray of the container tests runs.
package raytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// Job is the server's record of one submission.
type Job struct {
	Request ray.SubmitRequest
	Status  ray.JobStatus
	Message string
	Logs    string
	Polls   int // GETs of this job so far
	Start   time.Time
	End     time.Time
	Deleted bool
	// DriverNodeID is where the driver runs once the job has started; empty
	// means Ray's placement (see driverNode).
	DriverNodeID string
}

// Server is the fake dashboard.
type Server struct {
	*httptest.Server
	Token string // when set, requests need "Authorization: Bearer <Token>"

	mu            sync.Mutex
	jobs          map[string]*Job
	order         []string
	packages      map[string][]byte
	calls         []string
	nodes         []ray.Node
	stoppedAt     map[string]time.Time // node id -> when its raylet stopped answering
	clusterStatus string
	seq           int

	// OnSubmit may reject a submission (return an error text for a 400) or
	// set up the job; it runs with the lock held, so do not call Server methods.
	OnSubmit func(id string, j *Job) string
	// OnPoll runs on every GET /api/jobs/{id} before answering, with the lock
	// held: mutate j directly to script the job's life.
	OnPoll func(id string, j *Job)
	// Now is the server's clock (job start/end times, node deaths).
	Now func() time.Time
	// DeadAfter is how long a stopped node stays ALIVE in the node list
	// (DefaultDeadAfter when zero).
	DeadAfter time.Duration
}

// New starts a fake dashboard, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{jobs: map[string]*Job{}, packages: map[string][]byte{}, Now: time.Now}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Calls lists "METHOD path" of every request, in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// CallsWithPrefix lists the calls whose "METHOD path" starts with prefix.
func (s *Server) CallsWithPrefix(prefix string) []string {
	var out []string
	for _, c := range s.Calls() {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Package returns an uploaded package's bytes.
func (s *Server) Package(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.packages[name]
	return b, ok
}

// SetClusterStatus sets the text /api/cluster_status?format=1 returns.
func (s *Server) SetClusterStatus(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusterStatus = text
}

// Job returns a copy of a job's record.
func (s *Server) Job(id string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// JobIDs lists submission ids in submission order.
func (s *Server) JobIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// SetStatus moves a job to a status (and sets its end time when terminal).
func (s *Server) SetStatus(id string, st ray.JobStatus, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		SetStatus(j, st, msg, s.Now())
	}
}

// SetStatus is the lock-free form for use inside OnPoll/OnSubmit.
func SetStatus(j *Job, st ray.JobStatus, msg string, now time.Time) {
	j.Status, j.Message = st, msg
	if st.Terminal() && j.End.IsZero() {
		j.End = now
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path)
	if s.Token != "" {
		auth := r.Header.Get("Authorization")
		if auth == "" {
			http.Error(w, "Unauthorized: Missing authentication token", http.StatusUnauthorized)
			return
		}
		if auth != "Bearer "+s.Token {
			http.Error(w, "Forbidden: Invalid authentication token", http.StatusForbidden)
			return
		}
	}
	p := r.URL.Path
	switch {
	case p == "/api/version" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{"version": "4", "ray_version": "2.54.0", "ray_commit": "abc", "session_name": "session_x", "new_field": 1})
	case p == "/api/jobs/" && r.Method == http.MethodPost:
		s.submit(w, r)
	case p == "/api/jobs/" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, id := range s.order {
			if !s.jobs[id].Deleted {
				out = append(out, s.details(id, s.jobs[id]))
			}
		}
		writeJSON(w, out)
	case strings.HasPrefix(p, "/api/jobs/"):
		s.job(w, r, strings.TrimPrefix(p, "/api/jobs/"))
	case strings.HasPrefix(p, "/api/packages/gcs/"):
		name := strings.TrimPrefix(p, "/api/packages/gcs/")
		switch r.Method {
		case http.MethodGet:
			if _, ok := s.packages[name]; !ok {
				http.Error(w, fmt.Sprintf("Package gcs://%s does not exist", name), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusOK)
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			s.packages[name] = b
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	case p == "/api/v0/nodes":
		var rows []map[string]any
		for _, n := range s.currentNodes() {
			b, _ := json.Marshal(n)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			m["future_field"] = "ignored"
			rows = append(rows, m)
		}
		writeJSON(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"result": map[string]any{
			"total": len(rows), "num_after_truncation": len(rows), "num_filtered": len(rows), "result": rows,
			"partial_failure_warning": "", "warnings": nil}}})
	case p == "/api/cluster_status":
		if r.URL.Query().Get("format") != "1" {
			writeJSON(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"autoscalingStatus": nil, "clusterStatus": nil}})
			return
		}
		text := s.clusterStatus
		if text == "" {
			text = "No cluster status. It may take a few seconds for the Ray internal services to start up."
		}
		writeJSON(w, map[string]any{"result": true, "msg": "Got cluster status.", "data": map[string]any{"clusterStatus": text}})
	default:
		http.Error(w, "404: Not Found", http.StatusNotFound)
	}
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	req, ok := raymodel.ReadSubmitRequest(w, r) // one reading of Ray's request rules
	if !ok {
		return
	}
	id := req.SubmissionID
	if id == "" {
		s.seq++
		id = fmt.Sprintf("raysubmit_%016d", s.seq)
	}
	if _, dup := s.jobs[id]; dup {
		http.Error(w, fmt.Sprintf("Request failed with status code 400: Job with submission_id %s already exists. Please use a different submission_id.", id), http.StatusInternalServerError)
		return
	}
	j := &Job{Request: req, Status: ray.Pending, Message: "Job has not started yet.", Start: s.Now()}
	if s.OnSubmit != nil {
		if msg := s.OnSubmit(id, j); msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
	}
	s.jobs[id] = j
	s.order = append(s.order, id)
	writeJSON(w, map[string]string{"job_id": id, "submission_id": id})
}

func (s *Server) job(w http.ResponseWriter, r *http.Request, rest string) {
	id, action, _ := strings.Cut(rest, "/")
	j, ok := s.jobs[id]
	if !ok || j.Deleted {
		http.Error(w, fmt.Sprintf("Job %s does not exist", id), http.StatusNotFound)
		return
	}
	switch {
	case action == "" && r.Method == http.MethodGet:
		j.Polls++
		if s.OnPoll != nil {
			s.OnPoll(id, j)
		}
		writeJSON(w, s.details(id, j))
	case action == "" && r.Method == http.MethodDelete:
		if !j.Status.Terminal() {
			http.Error(w, fmt.Sprintf("Attempted to delete job with submission_id %s, but it is in the non-terminal state %s.", id, j.Status), http.StatusInternalServerError)
			return
		}
		j.Deleted = true
		writeJSON(w, map[string]bool{"deleted": true})
	case action == "logs" && r.Method == http.MethodGet:
		writeJSON(w, map[string]string{"logs": j.Logs})
	case action == "stop" && r.Method == http.MethodPost:
		if j.Status.Terminal() {
			writeJSON(w, map[string]bool{"stopped": false})
			return
		}
		SetStatus(j, ray.Stopped, "Job was intentionally stopped.", s.Now())
		writeJSON(w, map[string]bool{"stopped": true})
	default:
		http.Error(w, "404: Not Found", http.StatusNotFound)
	}
}

func (s *Server) details(id string, j *Job) map[string]any {
	var end any
	if !j.End.IsZero() {
		end = j.End.UnixMilli()
	}
	var driverNode any
	if j.Status != ray.Pending {
		driverNode = s.driverNode(j)
	}
	return map[string]any{
		"type": "SUBMISSION", "job_id": nil, "submission_id": id, "driver_info": nil,
		"status": j.Status, "entrypoint": j.Request.Entrypoint, "message": j.Message, "error_type": nil,
		"start_time": j.Start.UnixMilli(), "end_time": end, "metadata": j.Request.Metadata,
		"runtime_env": j.Request.RuntimeEnv, "driver_agent_http_address": nil, "driver_node_id": driverNode,
		"driver_exit_code": nil,
		// Fields Ray may add in later versions: clients must ignore them.
		"attempt_number": 0, "failure_info": map[string]any{"x": 1},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
