package raymodel

import (
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
)

// States of a job's supervisor actor (the State API's actor states).
const (
	ActorPending = "PENDING_CREATION"
	ActorAlive   = "ALIVE"
	ActorDead    = "DEAD"
)

// Error types Ray 2.54 sets on a failed job (job_submission JobErrorType).
const (
	ErrStartTimeout = "JOB_SUPERVISOR_ACTOR_START_TIMEOUT"
	ErrActorDied    = "JOB_SUPERVISOR_ACTOR_DIED"
	ErrRuntimeEnv   = "RUNTIME_ENV_SETUP_FAILURE"
	ErrEntrypoint   = "JOB_ENTRYPOINT_COMMAND_ERROR"
)

// SupervisorName is the supervisor actor's name (job/common.py
// JOB_ACTOR_NAME_TEMPLATE) in SupervisorNamespace.
const SupervisorNamespace = "SUPERVISOR_ACTOR_RAY_NAMESPACE"

// SupervisorName names job id's supervisor actor.
func SupervisorName(id string) string { return "_ray_internal_job_actor_" + id }

// Error is a message Ray answers verbatim (capitalized, punctuated).
type Error string

func (e Error) Error() string { return string(e) }

// Job is one submission: its JobInfo and its supervisor actor.
type Job struct {
	ID        string
	Request   ray.SubmitRequest
	Status    ray.JobStatus
	Message   string
	ErrorType string
	Logs      string
	Start     time.Time
	End       time.Time
	// DriverNodeID is where the supervisor (and the driver it starts) runs.
	DriverNodeID string
	ExitCode     *int
	ActorID      string
	actor        string
	attached     *node     // the raylet the driver connected to (see attach)
	killed       time.Time // the supervisor was killed; the monitor sees it one period later
	sup          *Alloc
	prog         Program
	held         []*Alloc
	want         []demand
	deleted      bool
}

func (j *Job) allocs() []*Alloc {
	if j.sup == nil {
		return j.held
	}
	return append([]*Alloc{j.sup}, j.held...)
}

// entrypointResources is what the supervisor actor asks for.
func entrypointResources(r ray.SubmitRequest) Resources {
	res := Resources{"CPU": r.EntrypointNumCPUs, "GPU": r.EntrypointNumGPUs, "memory": float64(r.EntrypointMemory)}
	for k, v := range r.EntrypointResources {
		res[k] = v
	}
	for k, v := range res {
		if v <= 0 {
			delete(res, k)
		}
	}
	return res
}

// Submit is POST /api/jobs/ once the request is valid: JobManager.submit_job
// records the job PENDING and creates its detached supervisor actor, which
// the scheduler places when it can. It fails only on a duplicate id.
func (c *Cluster) Submit(id string, req ray.SubmitRequest) (Job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step() // the world as it is before this job exists
	c.seq++
	if id == "" {
		id = fmt.Sprintf("raysubmit_%016d", c.seq)
	}
	if _, dup := c.jobs[id]; dup {
		return Job{}, Error(fmt.Sprintf("Job with submission_id %s already exists. Please use a different submission_id.", id))
	}
	j := &Job{ID: id, Request: req, Status: ray.Pending, Message: "Job has not started yet.", Start: c.now(),
		ActorID: fmt.Sprintf("%02d%030x", c.gen, c.seq), actor: ActorPending}
	c.jobs[id] = j
	c.ord = append(c.ord, id)
	c.step()
	return *j, nil
}

// Job returns a copy of a job as the dashboard reports it.
func (c *Cluster) Job(id string) (Job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	j, ok := c.jobs[id]
	if !ok || j.deleted {
		return Job{}, false
	}
	return *j, true
}

// Jobs lists the jobs in submission order.
func (c *Cluster) Jobs() []Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	var out []Job
	for _, id := range c.ord {
		if j := c.jobs[id]; !j.deleted {
			out = append(out, *j)
		}
	}
	return out
}

// Stop is POST /api/jobs/<id>/stop (JobManager.stop_job): it finds the
// supervisor actor by name and calls stop on it, fire and forget, answering
// true when the actor exists. A supervisor never placed cannot run the call:
// the job stays PENDING (until JobStartTimeout fails it) although the answer
// says stopped. ok is false for an unknown job.
func (c *Cluster) Stop(id string) (stopped, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	j, ok := c.jobs[id]
	if !ok || j.deleted {
		return false, false
	}
	switch j.actor {
	case ActorDead:
		return false, true
	case ActorPending:
		return true, true // queued on an actor that never starts
	}
	c.finish(j, ray.Stopped, "Job was intentionally stopped.", "", nil)
	c.step()
	return true, true
}

// Delete is DELETE /api/jobs/<id>: only a terminal job can be deleted.
func (c *Cluster) Delete(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	j, ok := c.jobs[id]
	if !ok || j.deleted {
		return Error(fmt.Sprintf("Job %s does not exist", id))
	}
	if !j.Status.Terminal() {
		return Error(fmt.Sprintf("Attempted to delete job with submission_id %s, but it is in the non-terminal state %s.", id, j.Status))
	}
	j.deleted = true
	return nil
}

// KillActor is GET /api/actors/kill?actor_id=...: the GCS kills the actor
// (a pending one included). A killed job supervisor fails its job at the
// job monitor's next loop: its ping raises ActorDiedError. It reports
// whether the actor was found alive or pending.
func (c *Cluster) KillActor(actorID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	for _, j := range c.jobs {
		if j.ActorID == actorID && j.actor != ActorDead {
			j.actor, j.killed = ActorDead, c.now()
			c.releaseAll(j)
			c.step()
			return true
		}
	}
	return false
}

// Actor is one row of GET /api/v0/actors: the job supervisors.
type Actor struct {
	ActorID   string `json:"actor_id"`
	ClassName string `json:"class_name"`
	Name      string `json:"name"`
	Namespace string `json:"ray_namespace"`
	State     string `json:"state"`
	NodeID    string `json:"node_id"`
}

// Actors lists the supervisor actors.
func (c *Cluster) Actors() []Actor {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step()
	var out []Actor
	for _, id := range c.ord {
		j := c.jobs[id]
		out = append(out, Actor{ActorID: j.ActorID, ClassName: "JobSupervisor", Name: SupervisorName(id),
			Namespace: SupervisorNamespace, State: j.actor, NodeID: j.DriverNodeID})
	}
	return out
}

// stepJobs is JobManager's monitor loop and the supervisors' work.
func (c *Cluster) stepJobs(now time.Time) {
	for _, id := range c.ord {
		j := c.jobs[id]
		if j.Status.Terminal() {
			continue
		}
		switch {
		case j.actor == ActorDead && since(now, j.killed) >= c.cfg.JobMonitorPeriod:
			c.finish(j, ray.Failed, "Job supervisor actor died: The actor died because it was killed by `ray.kill`.", ErrActorDied, nil)
		case j.actor == ActorDead:
		case j.Status == ray.Pending && now.Sub(j.Start) > c.cfg.JobStartTimeout:
			c.finish(j, ray.Failed, startTimeoutMessage(c.cfg.JobStartTimeout, len(entrypointResources(j.Request)) > 0), ErrStartTimeout, nil)
		case j.actor == ActorPending:
			// A placed supervisor starts its driver at once.
			if c.place(j); j.prog != nil {
				c.stepDriver(j, now)
			}
		case j.sup != nil && j.sup.lost && since(now, c.silentSince(j.sup)) >= c.cfg.JobMonitorPeriod:
			c.finish(j, ray.Failed, "Job supervisor actor died: the node "+j.sup.NodeIP+" running it stopped.", ErrActorDied, nil)
		case j.prog != nil && (j.sup == nil || !j.sup.lost):
			c.stepDriver(j, now)
		}
	}
}

// stepDriver runs the job's program on to now; its exit ends the job.
func (c *Cluster) stepDriver(j *Job, now time.Time) {
	j.want = nil
	if done, code := j.prog.Step(&Driver{c: c, j: j, Now: now}); done {
		if code == 0 {
			c.finish(j, ray.Succeeded, "Job finished successfully.", "", &code)
		} else {
			c.finish(j, ray.Failed, entrypointFailed(code, j.Logs), ErrEntrypoint, &code)
		}
	}
}

func (c *Cluster) silentSince(a *Alloc) time.Time {
	if n := c.find(a.NodeID); n != nil {
		return n.silent
	}
	return time.Time{}
}

// place schedules the supervisor: on the head node when the entrypoint asks
// for no resources (JobManager._get_label_selector) unless
// DriverOnWorkerNodes, anywhere they fit otherwise. Placed, it sets up the
// runtime env (the package must still be in the GCS) and starts the
// driver: RUNNING.
func (c *Cluster) place(j *Job) {
	req := entrypointResources(j.Request)
	var only func(*node) bool
	if len(req) == 0 && !c.cfg.DriverOnWorkerNodes {
		only = func(n *node) bool { return n.Head }
	}
	a, ok := c.acquire(req, only)
	if !ok {
		return
	}
	j.sup, j.actor, j.DriverNodeID = a, ActorAlive, a.NodeID
	j.attached = c.attach(a.NodeIP)
	for _, name := range jobPackages(j.Request.RuntimeEnv) {
		if p := c.pkgs[name]; p == nil || !p.stored {
			c.finish(j, ray.Failed, fmt.Sprintf("runtime_env setup failed: Failed to set up runtime environment: the package gcs://%s does not exist in the GCS (it was deleted once no job referenced it and its pin expired)", name), ErrRuntimeEnv, nil)
			return
		}
	}
	j.Status, j.Message = ray.Running, "Job is currently running."
	if c.Run != nil {
		j.prog = c.Run(j)
	}
}

func (c *Cluster) finish(j *Job, st ray.JobStatus, msg, errType string, code *int) {
	j.Status, j.Message, j.ErrorType, j.ExitCode = st, msg, errType, code
	if j.End.IsZero() {
		j.End = c.now()
	}
	if errType != "" && errType != ErrEntrypoint {
		j.Logs += msg + "\n" // the monitor writes the error into the driver log too
	}
	j.actor = ActorDead // the monitor kills the supervisor defensively
	c.releaseAll(j)
}

func (c *Cluster) releaseAll(j *Job) {
	for _, a := range j.allocs() {
		c.release(a)
	}
	j.sup, j.held, j.want = nil, nil, nil
}

func startTimeoutMessage(timeout time.Duration, resources bool) string {
	msg := fmt.Sprintf("Job supervisor actor failed to start within %.1f seconds. This timeout can be configured by setting the environment variable RAY_JOB_START_TIMEOUT_SECONDS.", timeout.Seconds())
	if resources {
		msg += " This may be because the job entrypoint's specified resources (entrypoint_num_cpus, entrypoint_num_gpus, entrypoint_resources, entrypoint_memory)aren't available on the cluster. Try checking the cluster's available resources with `ray status` and specifying fewer resources for the job entrypoint."
	}
	return msg
}

// attach is the raylet a driver started at ip connects to: the first ALIVE
// node at that address in the GCS's node list
// (GlobalStateAccessor::GetNodeToConnectForDriver). The GCS lists nodes
// from a hash map, in no set order: the model takes the lowest node id.
// Where nodes share an address (the host network) that may be another
// node than the driver's own.
func (c *Cluster) attach(ip string) *node {
	var best *node
	for _, n := range c.node {
		if n.IP == ip && n.state == "ALIVE" && (best == nil || n.ID < best.ID) {
			best = n
		}
	}
	return best
}

// entrypointFailed is the supervisor's message for a driver that exited
// non-zero: the log's last 10 lines, at most 20,000 characters
// (job_log_storage_client.py JobLogStorageClient.get_last_n_log_lines,
// NUM_LOG_LINES_ON_ERROR and MAX_LOG_SIZE).
func entrypointFailed(code int, logs string) string {
	lines := strings.SplitAfter(logs, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	last := tail(strings.Join(lines, ""), 20000)
	if last == "" {
		return fmt.Sprintf("Job entrypoint command failed with exit code %d. No logs available.", code)
	}
	return fmt.Sprintf("Job entrypoint command failed with exit code %d, last available logs (truncated to 20,000 chars):\n%s", code, last)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// demands are the requests nothing can place now: unplaced supervisors and
// what programs wait for.
func (c *Cluster) demands() []demand {
	var out []demand
	for _, id := range c.ord {
		j := c.jobs[id]
		if j.Status.Terminal() {
			continue
		}
		if j.actor == ActorPending {
			if req := entrypointResources(j.Request); len(req) > 0 {
				out = append(out, demand{bundles: []Resources{req}})
			}
		}
		out = append(out, j.want...)
	}
	return out
}
