package compose

import (
	"context"
	"fmt"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// Docker allows two networks of one name (two applies at the same moment
// made them, before labs had one writer); from then on every use of the
// name fails as "ambiguous". A project's networks are told from others by
// Compose's labels, as Compose itself does, and by ID.

// DuplicateNetworkError says which networks share the project network's
// name and cannot be removed by mltrain: another tool's, or the lab's own
// with containers attached.
type DuplicateNetworkError struct {
	Name  string
	Keep  string           // ID of the project's network kept; "" when none is the project's
	Extra []docker.Network // the others
}

func (e *DuplicateNetworkError) Error() string {
	var parts []string
	if e.Keep != "" {
		parts = append(parts, docker.ShortID(e.Keep)+" (this lab's, kept)")
	}
	for _, n := range e.Extra {
		what := "not made by this lab"
		if n.Labels[labels.Project] != "" && n.Labels[labels.Network] != "" {
			what = "labelled for project " + n.Labels[labels.Project]
		}
		if len(n.Containers) > 0 {
			what += ", in use by " + strings.Join(n.Containers, ", ")
		}
		parts = append(parts, docker.ShortID(n.ID)+" ("+what+")")
	}
	return fmt.Sprintf("network %s is ambiguous: %d networks have that name: %s", e.Name, len(parts), strings.Join(parts, "; "))
}

// Remove is the docker command that removes the extra networks.
func (e *DuplicateNetworkError) Remove() string {
	ids := []string{"docker", "network", "rm"}
	for _, n := range e.Extra {
		ids = append(ids, docker.ShortID(n.ID))
	}
	return strings.Join(ids, " ")
}

// hint names the command that removes the extra networks, and the
// containers to stop first.
func (e *DuplicateNetworkError) hint() string {
	var busy []string
	for _, n := range e.Extra {
		busy = append(busy, n.Containers...)
	}
	h := "remove the extra networks: '" + e.Remove() + "'"
	if len(busy) > 0 {
		h = "stop and remove the containers on them ('docker rm -f " + strings.Join(busy, " ") + "'), then " + h
	}
	return h + ", then run the command again"
}

// ensureNetwork makes the project's network key exist exactly once under
// name. Duplicates that are the project's and empty are removed (the
// oldest, or the one in use, is kept); any other is an error naming the
// command that removes it.
func ensureNetwork(ctx context.Context, eng docker.Engine, project, key, name string, lbl map[string]string, rep progress.Reporter) error {
	named, err := eng.NetworkList(ctx, name, nil)
	if err != nil {
		return err
	}
	if len(named) <= 1 {
		created, err := eng.NetworkEnsure(ctx, name, lbl)
		if created {
			progress.Note(rep, "created network "+name)
		}
		return err
	}
	keep := -1
	for i, n := range named { // oldest first: the first in use wins, else the oldest
		if !isProjectNetwork(n, project, key) {
			continue
		}
		if keep < 0 || len(named[keep].Containers) == 0 && len(n.Containers) > 0 {
			keep = i
		}
	}
	e := &DuplicateNetworkError{Name: name}
	for i, n := range named {
		switch {
		case i == keep:
			e.Keep = n.ID
		case isProjectNetwork(n, project, key) && len(n.Containers) == 0:
			if err := eng.NetworkRemove(ctx, n.ID); err != nil {
				return fmt.Errorf("remove duplicate network %s (%s): %w", name, docker.ShortID(n.ID), err)
			}
			progress.Note(rep, fmt.Sprintf("removed network %s (%s): an empty duplicate of this lab's", name, docker.ShortID(n.ID)))
		default:
			e.Extra = append(e.Extra, n)
		}
	}
	if len(e.Extra) > 0 {
		return clierr.WithHint(e, e.hint())
	}
	return nil
}

func isProjectNetwork(n docker.Network, project, key string) bool {
	return n.Labels[labels.Project] == project && n.Labels[labels.Network] == key
}
