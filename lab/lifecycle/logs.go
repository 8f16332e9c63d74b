package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	labservice "github.com/mltrain/mltrain/lab/service"
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
			return clierr.WithNext(fmt.Errorf("lab %q has no service %q", project, service), clierr.Step("run '%s' to see the lab's services", "status"))
		}
		return clierr.WithNext(fmt.Errorf("lab %q has no containers", project), clierr.Step("run '%s'", "up"))
	}
	if len(list) > 1 && follow {
		return clierr.WithNext(errors.New("-f follows one service at a time"), clierr.Step("name one service, e.g. '%s'", "logs", labservice.HeadService, "-f"))
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
