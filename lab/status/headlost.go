package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/service"
)

// A restarted head is a new Ray cluster (the lab runs no GCS fault
// tolerance): its GCS lists only the head, and the worker containers that ran
// before it keep running until their raylets give up on the old GCS
// (gcs_rpc_server_reconnect_timeout_s) and `ray start --block` exits 1; their
// restart policy then starts them again and they join the new head.
// docs/ray-fidelity.md, "Head restart".

// RayGCSReconnectTimeout is Ray 2.54's gcs_rpc_server_reconnect_timeout_s
// (src/ray/common/ray_config_def.h).
const RayGCSReconnectTimeout = 60 * time.Second

// LostHead are the workers that lost their head: running, absent from Ray's
// node list, and started before the head container last started.
func LostHead(pairs []WorkerNode, head docker.ContainerDetails) []WorkerNode {
	if !head.Running || head.StartedAt.IsZero() {
		return nil
	}
	var out []WorkerNode
	for _, w := range pairs {
		if w.Running && w.RayState == RayAbsent && !w.StartedAt.IsZero() && w.StartedAt.Before(head.StartedAt) {
			out = append(out, w)
		}
	}
	return out
}

// LostHeadNote says what happened to the workers lost and what comes next;
// heal is the command that brings the lab back whole ('mltrain up' of this
// lab: it recreates what did not rejoin).
func LostHeadNote(lost []WorkerNode, head docker.ContainerDetails, now time.Time, heal string) string {
	names := make([]string, 0, len(lost))
	for _, w := range lost {
		names = append(names, w.Service)
	}
	return fmt.Sprintf("%s lost their head: the head restarted %s ago, after their containers started, and a restarted head is a new Ray cluster "+
		"that does not know them; their raylets exit after Ray's GCS reconnect timeout (%s) and Docker starts them again (restart: on-failure) "+
		"to join it. If they have not rejoined a minute after that, run '%s'",
		strings.Join(names, ", "), now.Sub(head.StartedAt).Round(time.Second), Secs(RayGCSReconnectTimeout), heal)
}

// lostHead says so in st when workers lost their head; on a second host the
// head is another host's and is not looked at.
func (st *Status) lostHead(ctx context.Context, eng docker.Engine, project string, workers map[string]WorkerContainer, nodes []ray.Node) {
	if st.Joined != nil {
		return
	}
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project, labels.Service: service.HeadService})
	if err != nil || len(list) != 1 {
		return
	}
	head, err := eng.ContainerInspect(ctx, list[0].ID)
	if err != nil {
		return
	}
	pairs, _ := MatchWorkerNodes(workers, nodes, st.nodeIP)
	lost := LostHead(pairs, head)
	if len(lost) == 0 {
		return
	}
	heal := st.commands.Line("up")
	next := []string{heal}
	for _, c := range st.Next {
		// Their logs say only that the raylet cannot reach its GCS.
		if !slices.ContainsFunc(lost, func(w WorkerNode) bool { return c == st.commands.Line("logs", w.Service) }) && c != heal {
			next = append(next, c)
		}
	}
	for _, w := range lost {
		st.LostHead = append(st.LostHead, w.Service)
	}
	st.Ray += "; the workers lost their head (see below)"
	st.Notes = append([]string{LostHeadNote(lost, head, time.Now(), heal)}, st.Notes...)
	st.Next = next
}
