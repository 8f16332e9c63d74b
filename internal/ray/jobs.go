package ray

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// JobStatus is a Ray job's state.
type JobStatus string

const (
	Pending   JobStatus = "PENDING"
	Running   JobStatus = "RUNNING"
	Stopped   JobStatus = "STOPPED"
	Succeeded JobStatus = "SUCCEEDED"
	Failed    JobStatus = "FAILED"
)

// Terminal reports whether the job will not change state again.
func (s JobStatus) Terminal() bool { return s == Stopped || s == Succeeded || s == Failed }

// SubmitRequest is the body of POST /api/jobs/. Only fields Ray 2.54 accepts
// are here: the server answers 400 to an unknown key.
type SubmitRequest struct {
	Entrypoint          string             `json:"entrypoint"`
	SubmissionID        string             `json:"submission_id,omitempty"`
	RuntimeEnv          map[string]any     `json:"runtime_env,omitempty"` // URIs only, see PrepareRuntimeEnv
	Metadata            map[string]string  `json:"metadata,omitempty"`
	EntrypointNumCPUs   float64            `json:"entrypoint_num_cpus,omitempty"`
	EntrypointNumGPUs   float64            `json:"entrypoint_num_gpus,omitempty"`
	EntrypointMemory    int64              `json:"entrypoint_memory,omitempty"` // bytes; Ray rejects floats
	EntrypointResources map[string]float64 `json:"entrypoint_resources,omitempty"`
}

// DriverInfo is where a job's driver runs.
type DriverInfo struct {
	ID            string `json:"id"`
	NodeIPAddress string `json:"node_ip_address"`
	PID           string `json:"pid"`
}

// Job is JobDetails as the dashboard returns it. JSON nulls leave zero values.
type Job struct {
	Type                   string            `json:"type"` // SUBMISSION or DRIVER
	JobID                  string            `json:"job_id"`
	SubmissionID           string            `json:"submission_id"`
	DriverInfo             *DriverInfo       `json:"driver_info"`
	Status                 JobStatus         `json:"status"`
	Entrypoint             string            `json:"entrypoint"`
	Message                string            `json:"message"`
	ErrorType              string            `json:"error_type"`
	StartTimeMs            int64             `json:"start_time"`
	EndTimeMs              int64             `json:"end_time"`
	Metadata               map[string]string `json:"metadata"`
	RuntimeEnv             map[string]any    `json:"runtime_env"`
	DriverAgentHTTPAddress string            `json:"driver_agent_http_address"`
	DriverNodeID           string            `json:"driver_node_id"`
	DriverExitCode         *int              `json:"driver_exit_code"`
}

// Start is when the job was submitted (zero when unknown).
func (j Job) Start() time.Time { return msTime(j.StartTimeMs) }

// End is when the job became terminal (zero while it is not).
func (j Job) End() time.Time { return msTime(j.EndTimeMs) }

// Duration is End-Start for a terminal job, else 0.
func (j Job) Duration() time.Duration {
	if j.StartTimeMs == 0 || j.EndTimeMs == 0 {
		return 0
	}
	return time.Duration(j.EndTimeMs-j.StartTimeMs) * time.Millisecond
}

// ID is the id to use in job URLs: the submission id, else the driver job id.
func (j Job) ID() string {
	if j.SubmissionID != "" {
		return j.SubmissionID
	}
	return j.JobID
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Submit sends a job and returns its submission id. A duplicate submission
// id is reported by Ray as HTTP 500; errors.Is(err, ErrDuplicateSubmission)
// tells it apart.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (string, error) {
	if req.Entrypoint == "" {
		return "", fmt.Errorf("submit job: empty entrypoint")
	}
	var out struct {
		JobID        string `json:"job_id"`
		SubmissionID string `json:"submission_id"`
	}
	if err := c.postJSON(ctx, "/api/jobs/", req, &out); err != nil {
		if errors.Is(err, ErrDuplicateSubmission) {
			return "", fmt.Errorf("submit job %q: %w: %w", req.SubmissionID, ErrDuplicateSubmission, err)
		}
		return "", fmt.Errorf("submit job: %w", err)
	}
	if out.SubmissionID == "" {
		out.SubmissionID = out.JobID
	}
	return out.SubmissionID, nil
}

func jobPath(id string) string { return "/api/jobs/" + url.PathEscape(id) }

// Job returns one job by submission id or driver job id.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var j Job
	if err := c.getJSON(ctx, jobPath(id), &j); err != nil {
		return Job{}, fmt.Errorf("job %s: %w", id, err)
	}
	return j, nil
}

// Jobs lists every job Ray knows (submissions, then drivers).
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var js []Job
	if err := c.getJSON(ctx, "/api/jobs/", &js); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return js, nil
}

// Logs returns the whole driver log of a job ("" before the driver starts).
func (c *Client) Logs(ctx context.Context, id string) (string, error) {
	var out struct {
		Logs string `json:"logs"`
	}
	if err := c.getJSON(ctx, jobPath(id)+"/logs", &out); err != nil {
		return "", fmt.Errorf("logs of job %s: %w", id, err)
	}
	return out.Logs, nil
}

// Stop asks Ray to stop a job; false means it was not running. Stopping is
// asynchronous: wait for a terminal status afterwards.
func (c *Client) Stop(ctx context.Context, id string) (bool, error) {
	var out struct {
		Stopped bool `json:"stopped"`
	}
	if err := c.postJSON(ctx, jobPath(id)+"/stop", nil, &out); err != nil {
		return false, fmt.Errorf("stop job %s: %w", id, err)
	}
	return out.Stopped, nil
}

// Delete removes a terminal job's record (Ray answers 500 for a live job).
func (c *Client) Delete(ctx context.Context, id string) (bool, error) {
	var out struct {
		Deleted bool `json:"deleted"`
	}
	if err := c.do(ctx, http.MethodDelete, jobPath(id), nil, "", &out); err != nil {
		return false, fmt.Errorf("delete job %s: %w", id, err)
	}
	return out.Deleted, nil
}

// WaitOptions control Wait.
type WaitOptions struct {
	Poll     time.Duration  // between GETs; 1s when zero
	OnChange func(Job)      // called when the status or message changes
	OnPoll   func(Job)      // called after every successful poll
	Until    func(Job) bool // stop condition; Terminal() when nil
}

// Wait polls a job until Until says so (default: a terminal status) or ctx
// ends; it returns the last job seen. Transient errors are retried because a
// dashboard restarting for a second must not fail a 20-minute exercise.
func (c *Client) Wait(ctx context.Context, id string, o WaitOptions) (Job, error) {
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	until := o.Until
	if until == nil {
		until = func(j Job) bool { return j.Status.Terminal() }
	}
	var last Job
	var seen bool
	fails := 0
	for {
		j, err := c.Job(ctx, id)
		switch {
		case err == nil:
			fails = 0
			if !seen || j.Status != last.Status || j.Message != last.Message {
				if o.OnChange != nil {
					o.OnChange(j)
				}
			}
			last, seen = j, true
			if o.OnPoll != nil {
				o.OnPoll(j)
			}
			if until(j) {
				return j, nil
			}
			if j.Status.Terminal() {
				return j, fmt.Errorf("job %s ended %s before the expected state: %s", id, j.Status, j.Message)
			}
		case errors.Is(err, ErrAuthMissing), errors.Is(err, ErrAuthInvalid), IsNotFound(err):
			return last, err
		default:
			fails++
			if fails >= 10 || ctx.Err() != nil {
				return last, err
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for job %s (last status %s): %w", id, last.Status, ctx.Err())
		case <-time.After(poll):
		}
	}
}
