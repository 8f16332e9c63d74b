package lifecycle

import (
	"context"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// Down removes the lab's containers and network; volumes only with
// removeVolumes (the dataset volume is external and always kept).
func Down(ctx context.Context, eng docker.Engine, project string, removeVolumes bool, rep progress.Reporter) ([]string, error) {
	// Ray needs a few seconds after SIGTERM to leave the cluster cleanly.
	return compose.Down(ctx, eng, project, 30*time.Second, removeVolumes, rep)
}
