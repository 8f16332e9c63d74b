package scale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"golang.org/x/sync/errgroup"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// engineFloor times the least any tool can do for a lab of n containers on
// this engine: create n plain sleeper containers and start them all, in
// parallel, then remove them (not timed). It is the baseline that says how
// much of up's growth with workers is the engine's own start cost.
func engineFloor(b *testing.B, eng docker.Engine, image string, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	t0 := time.Now()
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			id, err := eng.ContainerCreate(ctx, docker.ContainerSpec{
				Name:       fmt.Sprintf("mltrain-floor-%d-%d", n, i),
				Config:     &container.Config{Image: image, Labels: map[string]string{dockertest.TestLabel: "1"}},
				HostConfig: &container.HostConfig{},
			})
			if err != nil {
				return fmt.Errorf("create floor container %d: %w", i, err)
			}
			ids[i] = id
			if err := eng.ContainerStart(ctx, id); err != nil {
				return fmt.Errorf("start floor container %d: %w", i, err)
			}
			return nil
		})
	}
	err := g.Wait()
	d := time.Since(t0)
	for _, id := range ids {
		if id != "" {
			_ = eng.ContainerRemove(ctx, id, true)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return d
}
