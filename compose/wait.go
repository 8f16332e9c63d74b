package compose

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
)

// LogTail is how many log lines a container failure shows.
const LogTail = 30

// pollEvery is how often waits re-inspect a container.
var pollEvery = 300 * time.Millisecond

// ContainerFailure is a container that exited or turned unhealthy while
// mltrain waited for it, with its last log lines.
type ContainerFailure struct {
	Container string
	Reason    string // "exited with code 1", "unhealthy", "OOM-killed"
	Logs      string
}

func (e *ContainerFailure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "container %s %s", e.Container, e.Reason)
	if e.Logs != "" {
		fmt.Fprintf(&b, "\n  last %d log lines of %s:\n", LogTail, e.Container)
		for _, l := range strings.Split(strings.TrimRight(e.Logs, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Troubleshoot is how to look into the container with Docker itself; the
// command the user ran adds how to try again.
func (e *ContainerFailure) Troubleshoot() string { return troubleshoot(e.Container) }

func troubleshoot(name string) string {
	return fmt.Sprintf("see 'docker logs %s' and 'docker inspect %s'", name, name)
}

// NotHealthyError is a container still not healthy when the wait for it
// ran out.
type NotHealthyError struct {
	Container string
	After     time.Duration
	Health    string
}

func (e *NotHealthyError) Error() string {
	return fmt.Sprintf("container %s not healthy after %s (health: %s)", e.Container, e.After, e.Health)
}

// Troubleshoot is how to look into the container with Docker itself.
func (e *NotHealthyError) Troubleshoot() string { return troubleshoot(e.Container) }

func failure(ctx context.Context, eng docker.Engine, name, reason string) error {
	var buf bytes.Buffer
	// A failing container's logs are the first thing to read; fetch them even
	// if the caller's context is about to end.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = eng.ContainerLogs(lctx, name, docker.LogsOptions{Tail: fmt.Sprint(LogTail)}, &buf, &buf)
	return &ContainerFailure{Container: name, Reason: reason, Logs: buf.String()}
}

// checkAlive returns a failure when the container has exited or is
// unhealthy; one Docker restarts under its restart policy is waited for
// while rs allows (nil: not at all).
func checkAlive(ctx context.Context, eng docker.Engine, d docker.ContainerDetails, rs *Restarts) error {
	if d.OOMKilled {
		return failure(ctx, eng, d.Name, "was killed: out of memory")
	}
	if wait, why := rs.waits(d); wait {
		return nil
	} else if why != "" {
		return failure(ctx, eng, d.Name, why)
	}
	switch {
	case !d.Running && (d.State == "exited" || d.State == "dead"):
		return failure(ctx, eng, d.Name, fmt.Sprintf("exited with code %d", d.ExitCode))
	case d.State == "restarting":
		// Exited, and its restart policy brings it back, and the caller
		// waits for no restart (rs nil): report it now rather than wait on
		// a container that may fail as it starts until the timeout.
		return failure(ctx, eng, d.Name, fmt.Sprintf("exited with code %d (Docker is restarting it: its restart policy)", d.ExitCode))
	case d.Health == "unhealthy":
		return failure(ctx, eng, d.Name, "is unhealthy (its healthcheck fails)")
	}
	return nil
}

// WaitHealthy waits until the container is healthy (or simply running when it
// has no healthcheck), failing fast when it exits or turns unhealthy; while
// Docker restarts it under its restart policy it waits, silently.
func WaitHealthy(ctx context.Context, eng docker.Engine, name string, timeout time.Duration) error {
	return (&Restarts{}).WaitHealthy(ctx, eng, name, timeout)
}

// WaitHealthy is WaitHealthy waiting for Docker's restarts as r says.
func (r *Restarts) WaitHealthy(ctx context.Context, eng docker.Engine, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		d, err := eng.ContainerInspect(ctx, name)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", name, err)
		}
		if err := checkAlive(ctx, eng, d, r); err != nil {
			return err
		}
		if d.Running && (d.Health == "" || d.Health == "healthy") {
			return nil
		}
		if d.Running && d.Health == "starting" && passesHealthcheckNow(ctx, eng, d) {
			return nil
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return &NotHealthyError{Container: name, After: timeout, Health: d.Health}
			}
			return fmt.Errorf("wait for %s: %w", name, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// passesHealthcheckNow runs the container's own healthcheck test once, now.
// The engine runs the first check only after a whole interval (5 s in the
// lab; start_interval needs API 1.44), so each layer of depends_on would
// cost that much; running the very same test ourselves lets dependents start
// as soon as the service is ready, and never earlier.
func passesHealthcheckNow(ctx context.Context, eng docker.Engine, d docker.ContainerDetails) bool {
	if d.Config == nil || d.Config.Healthcheck == nil || len(d.Config.Healthcheck.Test) < 2 {
		return false
	}
	test := d.Config.Healthcheck.Test
	var cmd []string
	switch test[0] {
	case "CMD":
		cmd = test[1:]
	case "CMD-SHELL":
		cmd = []string{"/bin/sh", "-c", test[1]}
	default:
		return false
	}
	timeout := d.Config.Healthcheck.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := eng.Exec(ectx, d.ID, cmd)
	return err == nil && res.ExitCode == 0
}

func waitExited0(ctx context.Context, eng docker.Engine, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		d, err := eng.ContainerInspect(ctx, name)
		if err != nil {
			return fmt.Errorf("wait for %s to complete: %w", name, err)
		}
		if !d.Running && d.State == "exited" {
			if d.ExitCode == 0 {
				return nil
			}
			return failure(ctx, eng, name, fmt.Sprintf("exited with code %d", d.ExitCode))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to complete: %w", name, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// Watch checks the project's containers once: the first one that exited or
// is unhealthy is returned as a failure. Readiness loops call it between
// probes so a crashed service fails `up` at once instead of at the timeout;
// one Docker restarts under its restart policy is waited for as rs says
// (rs lives as long as the loop).
func Watch(ctx context.Context, eng docker.Engine, project string, rs *Restarts) error {
	list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return err
	}
	for _, c := range list {
		if c.State == "running" && !strings.Contains(c.Status, "unhealthy") {
			continue
		}
		d, err := eng.ContainerInspect(ctx, c.ID)
		if err != nil {
			return err
		}
		if err := checkAlive(ctx, eng, d, rs); err != nil {
			return err
		}
	}
	return nil
}
