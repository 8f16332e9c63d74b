package lifecycle

import (
	"context"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/lab/status"
)

// StopWorker stops worker index gracefully (the fault-tolerance exercise's
// "docker stop ray-worker-N").
func StopWorker(ctx context.Context, eng docker.Engine, project string, index int) (string, error) {
	w, err := status.FindWorker(ctx, eng, status.WorkerQuery{Project: project, Index: &index})
	if err != nil {
		return "", err
	}
	return w.Name, eng.ContainerStop(ctx, w.ID, 30*time.Second)
}

// StartWorker starts worker index again and waits until it is healthy.
func StartWorker(ctx context.Context, eng docker.Engine, project string, index int) (string, error) {
	w, err := status.FindWorker(ctx, eng, status.WorkerQuery{Project: project, Index: &index})
	if err != nil {
		return "", err
	}
	if err := eng.ContainerStart(ctx, w.ID); err != nil {
		return w.Name, err
	}
	return w.Name, compose.WaitHealthy(ctx, eng, w.Name, 3*time.Minute)
}
