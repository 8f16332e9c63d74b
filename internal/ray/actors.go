package ray

import (
	"context"
	"fmt"
	"net/url"
)

// Actor is one row of the State API's actor list (GET /api/v0/actors).
type Actor struct {
	ActorID   string `json:"actor_id"`
	ClassName string `json:"class_name"`
	Name      string `json:"name"`
	Namespace string `json:"ray_namespace"`
	State     string `json:"state"` // DEPENDENCIES_UNREADY, PENDING_CREATION, ALIVE, RESTARTING, DEAD
	NodeID    string `json:"node_id"`
}

// SupervisorActorName is the name Ray 2.54 gives a job's supervisor actor
// (dashboard/modules/job/common.py JOB_ACTOR_NAME_TEMPLATE).
func SupervisorActorName(submissionID string) string {
	return "_ray_internal_job_actor_" + submissionID
}

// JobSupervisor finds job id's supervisor actor. A job whose supervisor was
// never placed has it PENDING_CREATION: `ray job stop` queues its stop call
// on that actor, where it never runs; killing the actor is what ends such a
// job (the job manager's monitor then marks it FAILED).
func (c *Client) JobSupervisor(ctx context.Context, submissionID string) (Actor, bool, error) {
	q := url.Values{"filter_keys": {"name"}, "filter_predicates": {"="}, "filter_values": {SupervisorActorName(submissionID)},
		"limit": {"100"}, "detail": {"false"}}
	var out struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			Result struct {
				Result []Actor `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := c.getJSON(ctx, "/api/v0/actors?"+q.Encode(), &out); err != nil {
		return Actor{}, false, fmt.Errorf("find the supervisor actor of job %s: %w", submissionID, err)
	}
	if !out.Result {
		return Actor{}, false, fmt.Errorf("find the supervisor actor of job %s: the dashboard answered result=false: %s", submissionID, out.Msg)
	}
	var found Actor
	for _, a := range out.Data.Result.Result {
		if a.Name != SupervisorActorName(submissionID) {
			continue
		}
		found = a
		if a.State != "DEAD" {
			return a, true, nil // a live one wins over a dead one of an earlier cluster
		}
	}
	return found, found.ActorID != "", nil
}

// KillActor force-kills an actor without restart, as the dashboard's
// GET /api/actors/kill does (reporter_head.py kill_actor_gcs).
func (c *Client) KillActor(ctx context.Context, actorID string) error {
	q := url.Values{"actor_id": {actorID}, "force_kill": {"true"}, "no_restart": {"true"}}
	var out struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
	}
	if err := c.getJSON(ctx, "/api/actors/kill?"+q.Encode(), &out); err != nil {
		return fmt.Errorf("kill actor %s: %w", actorID, err)
	}
	if !out.Result {
		return fmt.Errorf("kill actor %s: %s", actorID, out.Msg)
	}
	return nil
}
