package docker

import (
	"context"
	"fmt"
	"sort"

	"github.com/moby/moby/client"
)

func (s *SDK) VolumeEnsure(ctx context.Context, name string, labels map[string]string) (bool, error) {
	if _, err := s.c.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return false, nil
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	if _, err := s.c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels}); err != nil {
		return false, fmt.Errorf("create volume %s: %w", name, err)
	}
	return true, nil
}

func (s *SDK) VolumeInspect(ctx context.Context, name string) (Volume, error) {
	r, err := s.c.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		return Volume{}, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	v := r.Volume
	return Volume{Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint, CreatedAt: v.CreatedAt, Driver: v.Driver, Options: v.Options}, nil
}

func (s *SDK) VolumeList(ctx context.Context, labels map[string]string) ([]Volume, error) {
	r, err := s.c.VolumeList(ctx, client.VolumeListOptions{Filters: labelFilters(labels)})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var out []Volume
	for _, v := range r.Items {
		out = append(out, Volume{Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint, CreatedAt: v.CreatedAt, Driver: v.Driver, Options: v.Options})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *SDK) VolumeRemove(ctx context.Context, name string) error {
	if _, err := s.c.VolumeRemove(ctx, name, client.VolumeRemoveOptions{}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}
