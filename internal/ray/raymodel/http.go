package raymodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mltrain/mltrain/internal/ray"
)

// Handler serves the Ray dashboard's HTTP API from the model, as Ray 2.54's
// dashboard answers it (python/ray/dashboard/modules/job/job_head.py,
// state_head.py, reporter_head.py): the Jobs API, working_dir packages, the
// State API's nodes and actors, the actor kill endpoint and the cluster
// status. token, when set, is Ray's token auth (RAY_AUTH_MODE=token).
func Handler(c *Cluster, token string) http.Handler {
	h := &handler{c: c, token: token}
	return http.HandlerFunc(h.serve)
}

type handler struct {
	c     *Cluster
	token string
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	if h.token != "" {
		switch auth := r.Header.Get("Authorization"); {
		case auth == "":
			http.Error(w, "Unauthorized: Missing authentication token", http.StatusUnauthorized)
			return
		case auth != "Bearer "+h.token:
			http.Error(w, "Forbidden: Invalid authentication token", http.StatusForbidden)
			return
		}
	}
	p := r.URL.Path
	switch {
	case p == "/api/version" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{"version": "4", "ray_version": "2.54.0", "ray_commit": "raymodel", "session_name": fmt.Sprintf("session_%d", h.c.generation())})
	case p == "/api/jobs/" && r.Method == http.MethodPost:
		h.submit(w, r)
	case p == "/api/jobs/" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for _, j := range h.c.Jobs() {
			out = append(out, details(j))
		}
		writeJSON(w, out)
	case strings.HasPrefix(p, "/api/jobs/"):
		h.job(w, r, strings.TrimPrefix(p, "/api/jobs/"))
	case strings.HasPrefix(p, "/api/packages/gcs/"):
		name := strings.TrimPrefix(p, "/api/packages/gcs/")
		switch r.Method {
		case http.MethodGet:
			if !h.c.PinPackage(name) {
				http.Error(w, fmt.Sprintf("Package gcs://%s does not exist", name), http.StatusNotFound)
			}
		case http.MethodPut:
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			h.c.PutPackage(name, b)
		default:
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	case p == "/api/v0/nodes":
		writeList(w, h.c.Nodes())
	case p == "/api/v0/actors":
		h.actors(w, r)
	case p == "/api/actors/kill":
		id := r.URL.Query().Get("actor_id")
		if id == "" {
			writeJSON(w, map[string]any{"result": false, "msg": "actor_id is required.", "data": map[string]any{}})
			return
		}
		if !h.c.KillActor(id) {
			writeJSON(w, map[string]any{"result": false, "msg": fmt.Sprintf("Actor with id %s not found.", id), "data": map[string]any{}})
			return
		}
		writeJSON(w, map[string]any{"result": true, "msg": "Force killed actor with id " + id, "data": map[string]any{}})
	case p == "/api/cluster_status":
		if r.URL.Query().Get("format") != "1" {
			writeJSON(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"autoscalingStatus": nil, "clusterStatus": nil}})
			return
		}
		writeJSON(w, map[string]any{"result": true, "msg": "Got cluster status.", "data": map[string]any{"clusterStatus": h.c.ClusterStatus()}})
	default:
		http.Error(w, "404: Not Found", http.StatusNotFound)
	}
}

// ReadSubmitRequest reads POST /api/jobs/'s body as Ray's job_head does:
// Ray strips null values, then builds the JobSubmitRequest dataclass, so an
// unknown key, a missing entrypoint or a local working_dir is a 400 with
// Ray's text. It writes that answer and returns false on a bad request.
func ReadSubmitRequest(w http.ResponseWriter, r *http.Request) (ray.SubmitRequest, bool) {
	body, _ := io.ReadAll(r.Body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req ray.SubmitRequest
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument: "+err.Error(), http.StatusBadRequest)
		return req, false
	}
	if req.Entrypoint == "" {
		http.Error(w, "TypeError: missing required argument 'entrypoint'", http.StatusBadRequest)
		return req, false
	}
	if wd, ok := req.RuntimeEnv["working_dir"].(string); ok && !strings.Contains(wd, "://") {
		http.Error(w, fmt.Sprintf("ValueError: working_dir %q is a local path", wd), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	req, ok := ReadSubmitRequest(w, r)
	if !ok {
		return
	}
	j, err := h.c.Submit(req.SubmissionID, req)
	if err != nil {
		http.Error(w, "Request failed with status code 400: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]string{"job_id": j.ID, "submission_id": j.ID})
}

func (h *handler) job(w http.ResponseWriter, r *http.Request, rest string) {
	id, action, _ := strings.Cut(rest, "/")
	j, ok := h.c.Job(id)
	if !ok {
		http.Error(w, fmt.Sprintf("Job %s does not exist", id), http.StatusNotFound)
		return
	}
	switch {
	case action == "" && r.Method == http.MethodGet:
		writeJSON(w, details(j))
	case action == "" && r.Method == http.MethodDelete:
		if err := h.c.Delete(id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]bool{"deleted": true})
	case action == "logs" && r.Method == http.MethodGet:
		writeJSON(w, map[string]string{"logs": j.Logs})
	case action == "stop" && r.Method == http.MethodPost:
		stopped, _ := h.c.Stop(id)
		writeJSON(w, map[string]bool{"stopped": stopped})
	default:
		http.Error(w, "404: Not Found", http.StatusNotFound)
	}
}

// actors is the State API's list, with its equality filters
// (filter_keys/filter_predicates/filter_values, repeated).
func (h *handler) actors(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	keys, vals := q["filter_keys"], q["filter_values"]
	var rows []map[string]any
	for _, a := range h.c.Actors() {
		b, _ := json.Marshal(a)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ok := true
		for i, k := range keys {
			if i < len(vals) && fmt.Sprint(m[k]) != vals[i] {
				ok = false
			}
		}
		if ok {
			rows = append(rows, m)
		}
	}
	writeList(w, rows)
}

// details is JobDetails as the dashboard returns it.
func details(j Job) map[string]any {
	var end, driverNode, errType, code any
	if !j.End.IsZero() {
		end = j.End.UnixMilli()
	}
	if j.Status != ray.Pending && j.DriverNodeID != "" {
		driverNode = j.DriverNodeID
	}
	if j.ErrorType != "" {
		errType = j.ErrorType
	}
	if j.ExitCode != nil {
		code = *j.ExitCode
	}
	return map[string]any{
		"type": "SUBMISSION", "job_id": nil, "submission_id": j.ID, "driver_info": nil,
		"status": j.Status, "entrypoint": j.Request.Entrypoint, "message": j.Message, "error_type": errType,
		"start_time": j.Start.UnixMilli(), "end_time": end, "metadata": j.Request.Metadata,
		"runtime_env": j.Request.RuntimeEnv, "driver_agent_http_address": nil, "driver_node_id": driverNode,
		"driver_exit_code": code,
	}
}

func writeList(w http.ResponseWriter, rows any) {
	n := 0
	if b, err := json.Marshal(rows); err == nil {
		var xs []any
		_ = json.Unmarshal(b, &xs)
		n = len(xs)
	}
	writeJSON(w, map[string]any{"result": true, "msg": "", "data": map[string]any{"result": map[string]any{
		"total": n, "num_after_truncation": n, "num_filtered": n, "result": rows,
		"partial_failure_warning": "", "warnings": nil}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
