package docker

import (
	"context"
	"fmt"
	"sort"

	"github.com/moby/moby/client"
)

func (s *SDK) NetworkEnsure(ctx context.Context, name string, labels map[string]string) (bool, error) {
	if _, err := s.c.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		return false, nil
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("inspect network %s: %w", name, err)
	}
	if _, err := s.c.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		if IsConflict(err) { // created concurrently by another mltrain
			return false, nil
		}
		return false, fmt.Errorf("create network %s: %w", name, err)
	}
	return true, nil
}

// NetworkList inspects each listed network for its containers: the list
// API leaves them out, and whether a network is in use decides whether a
// duplicate may be removed.
func (s *SDK) NetworkList(ctx context.Context, name string, labels map[string]string) ([]Network, error) {
	f := labelFilters(labels)
	if name != "" {
		f.Add("name", name) // a substring match: exact names are kept below
	}
	r, err := s.c.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var out []Network
	for _, n := range r.Items {
		if name != "" && n.Name != name {
			continue
		}
		in, err := s.c.NetworkInspect(ctx, n.ID, client.NetworkInspectOptions{})
		if IsNotFound(err) {
			continue // removed since the list
		}
		if err != nil {
			return nil, fmt.Errorf("inspect network %s (%s): %w", n.Name, ShortID(n.ID), err)
		}
		nw := Network{ID: n.ID, Name: n.Name, Labels: n.Labels, Created: n.Created}
		for _, c := range in.Network.Containers {
			nw.Containers = append(nw.Containers, c.Name)
		}
		sort.Strings(nw.Containers)
		out = append(out, nw)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Created.Before(out[j].Created)
	})
	return out, nil
}

func (s *SDK) NetworkRemove(ctx context.Context, nameOrID string) error {
	if _, err := s.c.NetworkRemove(ctx, nameOrID, client.NetworkRemoveOptions{}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", nameOrID, err)
	}
	return nil
}

// ShortID is the 12 characters of an engine ID that docker's commands show
// and accept.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func labelFilters(labels map[string]string) client.Filters {
	f := client.Filters{}
	for k, v := range labels {
		if v == "" {
			f.Add("label", k)
		} else {
			f.Add("label", k+"="+v)
		}
	}
	return f
}
