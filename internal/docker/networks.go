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

func (s *SDK) NetworkList(ctx context.Context, labels map[string]string) ([]string, error) {
	r, err := s.c.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var out []string
	for _, n := range r.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, nil
}

func (s *SDK) NetworkRemove(ctx context.Context, name string) error {
	if _, err := s.c.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	return nil
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
