// Package ready waits for a lab to be proven ready: every container running
// and healthy as the engine reports it, each service's own probe (HTTP), and
// the semantic checks the caller adds (lab's: Ray sees one head and every
// worker with its GPU). While it waits it
// watches the containers, so a crashed service fails the wait at once with its
// logs instead of at the timeout (ddev-style).
package ready

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
)

// ErrNotReady: checks still failed when the wait ran out; the error names
// them with what they last saw, and the command that waited says what to do.
var ErrNotReady = errors.New("lab not ready")

// Check is one readiness probe. Run returns what it saw when it passes.
type Check struct {
	Name string
	Run  func(ctx context.Context) (string, error)
}

// Every is how often checks and the container watch are repeated.
var Every = 250 * time.Millisecond

// Wait runs every check until it passes, all in parallel, watching the
// project's containers meanwhile. It returns the first container failure, or
// a timeout error naming the checks that never passed and why.
func Wait(ctx context.Context, eng docker.Engine, project string, checks []Check, timeout time.Duration, rep progress.Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var mu sync.Mutex
	lastErr := map[string]error{}
	watchErr := make(chan error, 1)
	// A container Docker restarts under its restart policy (a worker whose
	// raylet gave up on a restarted head) is waited for, bounded and saying
	// so, not reported as a fault.
	restarts := &compose.Restarts{Say: func(l string) { progress.Say(rep, "ready", l) }}
	go func() {
		for {
			if err := compose.Watch(ctx, eng, project, restarts); err != nil && ctx.Err() == nil {
				watchErr <- err
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(Every):
			}
		}
	}()

	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Add(1)
		go func(c Check) {
			defer wg.Done()
			step := "ready " + c.Name
			progress.Begin(rep, step, "")
			for {
				detail, err := c.Run(ctx)
				if err == nil {
					progress.End(rep, step, detail)
					mu.Lock()
					delete(lastErr, c.Name)
					mu.Unlock()
					return
				}
				mu.Lock()
				if prev := lastErr[c.Name]; prev == nil || prev.Error() != err.Error() {
					progress.Say(rep, step, "waiting: "+err.Error())
				}
				lastErr[c.Name] = err
				mu.Unlock()
				select {
				case <-ctx.Done():
					progress.Failed(rep, step, err)
					return
				case <-time.After(Every):
				}
			}
		}(c)
	}
	wg.Wait()
	select {
	case err := <-watchErr:
		return err
	default:
	}
	if len(lastErr) == 0 {
		return nil
	}
	names := make([]string, 0, len(lastErr))
	for n := range lastErr {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s: %v", n, lastErr[n]))
	}
	err := fmt.Errorf("lab not ready after %s; still failing: %s", timeout, strings.Join(parts, "; "))
	if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
		err = fmt.Errorf("%w (%w)", err, context.Canceled)
	}
	return clierr.Mark(err, ErrNotReady)
}

// HTTP passes when GET url answers a status below 400 (with header set).
func HTTP(name, url string, header http.Header) Check {
	return Check{Name: name, Run: func(ctx context.Context) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		if err != nil {
			return "", fmt.Errorf("probe %s: %w", url, err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", fmt.Errorf("GET %s: %w", url, err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode >= 400 {
			return "", fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
		}
		return fmt.Sprintf("%s answers %d", url, resp.StatusCode), nil
	}}
}

// Healthy passes when each of services has a running container whose
// health, as the engine reports it, is healthy (or that has no healthcheck):
// what verify's containers checks read. The engine says "starting" until
// its first scheduled probe passes, one interval after the start, even
// when the service answers already; a lab called ready before then fails
// the verify run right after it.
func Healthy(eng docker.Engine, project string, services []string) Check {
	return Check{Name: "health", Run: func(ctx context.Context) (string, error) {
		list, err := eng.ContainerList(ctx, map[string]string{labels.Project: project})
		if err != nil {
			return "", fmt.Errorf("list the containers of lab %q: %w", project, err)
		}
		ids := map[string]string{}
		for _, c := range list {
			ids[c.Labels[labels.Service]] = c.ID
		}
		var waiting []string
		for _, s := range services {
			id, ok := ids[s]
			if !ok {
				waiting = append(waiting, s+" has no container")
				continue
			}
			d, err := eng.ContainerInspect(ctx, id)
			if err != nil {
				return "", fmt.Errorf("inspect the container of %s: %w", s, err)
			}
			switch {
			case !d.Running:
				waiting = append(waiting, s+" "+d.State)
			case d.Health != "" && d.Health != "healthy":
				waiting = append(waiting, s+" "+d.Health)
			}
		}
		if len(waiting) > 0 {
			return "", fmt.Errorf("container health: %s", strings.Join(waiting, ", "))
		}
		return fmt.Sprintf("%d containers running and healthy", len(services)), nil
	}}
}
