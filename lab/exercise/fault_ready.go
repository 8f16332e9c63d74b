package exercise

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/status"
)

// healTimeout bounds the wait for a restarted worker's new node (and
// --timeout, when shorter): `ray start` gives up on a GCS it cannot reach
// within about 10 s, so a minute is ample.
const healTimeout = time.Minute

// faultReady runs before anything is submitted: the exercise stops the
// training worker, and Ray Train resumes only on another ALIVE node. A
// worker of this host that is already stopped is started again and waited
// for until Ray lists its new node ALIVE (a restarted raylet is a new
// node); one that does not come back, or a lab with fewer than two ALIVE
// worker nodes, refuses the run with the command that makes it whole.
func faultReady(ctx context.Context, r *runner) error {
	ws, err := status.ListWorkers(ctx, r.env.Engine, r.env.Project)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.Running {
			continue
		}
		if err := heal(ctx, r, w); err != nil {
			return err
		}
	}
	alive, err := aliveWorkerNodes(ctx, r)
	if err != nil {
		return err
	}
	if alive < 2 && len(ws) >= 2 {
		// Every worker container runs, but one started moments ago (a
		// restart, an earlier interrupted run's cleanup) has not
		// registered its new node yet: wait for it, bounded.
		limit := min(healTimeout, r.o.Timeout)
		r.say("Ray lists %d ALIVE worker node(s) of %d running worker containers: waiting up to %s for the others to register", alive, len(ws), limit)
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		for alive < 2 {
			if err := sleep(wctx, r.o.Poll); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				break
			}
			n, err := aliveWorkerNodes(wctx, r)
			if err != nil {
				if wctx.Err() != nil {
					break // the wait is over; the last count stands
				}
				return err
			}
			alive = n
		}
	}
	if alive < 2 {
		return clierr.Hintf("run '"+r.env.Commands.Line("status")+"' to see which worker is missing, then '"+r.env.Commands.Line("up")+"'",
			"Ray lists %d ALIVE worker node(s): the fault exercise stops the one that trains and needs another for Ray Train to resume on, so nothing was stopped", alive)
	}
	return nil
}

// aliveWorkerNodes counts the worker nodes Ray lists ALIVE.
func aliveWorkerNodes(ctx context.Context, r *runner) (int, error) {
	nodes, err := r.env.Ray.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	alive := 0
	for _, n := range nodes {
		if n.Alive() && !n.IsHeadNode {
			alive++
		}
	}
	return alive, nil
}

// heal starts stopped worker w and waits until Ray lists a node of it that
// was not there before, ALIVE.
func heal(ctx context.Context, r *runner, w status.WorkerContainer) error {
	idx := strconv.Itoa(w.Index)
	next := "run '" + r.env.Commands.Line("worker", "start", idx) + "', then '" + r.env.Commands.Line("lab", "fault") + "' again"
	before, err := r.env.Ray.Nodes(ctx)
	if err != nil {
		return err
	}
	r.say("%s is stopped: starting it again first (stopping the training worker with another one down would leave Ray Train nowhere to resume)", w.Name)
	if err := r.env.Engine.ContainerStart(ctx, w.ID); err != nil {
		return clierr.Hintf(next, "worker container %s is stopped and could not be started again: %w; nothing was stopped", w.Name, err)
	}
	limit := min(healTimeout, r.o.Timeout)
	hctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		d, err := r.env.Engine.ContainerInspect(hctx, w.ID)
		if err == nil && !d.Running {
			return clierr.Hintf(next, "worker container %s exited again after its start (%s); nothing was stopped", w.Name, d.State)
		}
		if err == nil {
			nodes, nerr := r.env.Ray.Nodes(hctx)
			if nerr == nil {
				if n, ok := newNodeOf(nodes, before, status.WorkerContainer{Index: w.Index, ContainerDetails: d}, r.env.NodeIP); ok {
					r.say("Ray lists %s's new node %s ALIVE", w.Name, n.NodeID)
					return nil
				}
			}
		}
		if err := sleep(hctx, r.o.Poll); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return clierr.Hintf(next, "started %s again, but Ray listed no new ALIVE node of it within %s; nothing was stopped", w.Name, limit)
		}
	}
}

// newNodeOf is an ALIVE node of worker w that before did not list: by the
// node's service label on the host network (where nodes share the host's
// address), else by the container's address.
func newNodeOf(nodes, before []ray.Node, w status.WorkerContainer, hostIP string) (ray.Node, bool) {
	for _, n := range nodes {
		if !n.Alive() || slices.ContainsFunc(before, func(b ray.Node) bool { return b.NodeID == n.NodeID }) {
			continue
		}
		if hostIP != "" {
			if idx, ok := service.WorkerIndexOf(n.Labels[labels.RayNodeService]); ok && idx == w.Index {
				return n, true
			}
			continue
		}
		if slices.Contains(w.IPs(), n.NodeIP) {
			return n, true
		}
	}
	return ray.Node{}, false
}

// stopSays is what `lab fault` tells the student before it stops the
// training worker: what the stop is, and what Ray shows for it
// (docs/ray-fidelity.md, "graceful stop").
func stopSays(name string) string {
	return fmt.Sprintf("stopping %s as `docker stop` does (SIGTERM): its raylet unregisters, so Ray lists the node DEAD within about a second "+
		"(\"received SIGTERM\"); a killed or crashed worker would stay ALIVE until Ray's health checks give up (about 15 s), a cut network up to about a minute",
		name)
}
