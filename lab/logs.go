package lab

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
)

// Logs writes a service's logs (every service's, prefixed, when service is "").
func Logs(ctx context.Context, eng docker.Engine, project, service string, follow bool, tail string, stdout, stderr io.Writer) error {
	filter := map[string]string{labels.Project: project}
	if service != "" {
		filter[labels.Service] = service
	}
	list, err := eng.ContainerList(ctx, filter)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		if service != "" {
			return withNext(fmt.Errorf("lab %q has no service %q", project, service), func(c Commands) string {
				return "run '" + c.Line("status") + "' to see the lab's services"
			})
		}
		return withNext(fmt.Errorf("lab %q has no containers", project), func(c Commands) string { return "run '" + c.Line("up") + "'" })
	}
	if len(list) > 1 && follow {
		return withNext(errors.New("-f follows one service at a time"), func(c Commands) string {
			return "name one service, e.g. '" + c.Line("logs", HeadService, "-f") + "'"
		})
	}
	for _, c := range list {
		if len(list) > 1 {
			fmt.Fprintf(stdout, "==> %s <==\n", c.Name)
		}
		if err := eng.ContainerLogs(ctx, c.ID, docker.LogsOptions{Tail: tail, Follow: follow}, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}
