// Package ready waits for a lab to be proven ready, in layers: containers
// alive and healthy, then each service's own probe (HTTP), then the semantic
// check that Ray sees one head and every worker with its GPU. While it waits it
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
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
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
	go func() {
		for {
			if err := compose.Watch(ctx, eng, project); err != nil && ctx.Err() == nil {
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

// RayCluster passes when the dashboard answers with the token and Ray reports
// one ALIVE head and exactly wantWorkers ALIVE workers holding wantGPUs GPUs
// in total.
//
// nodeIP, when set, is the address this host's nodes advertise (nodes that
// span hosts): only those count, so nodes other hosts joined neither make
// the count nor hide a missing local one.
func RayCluster(c *ray.Client, wantWorkers int, wantGPUs float64, nodeIP string) Check {
	return Check{Name: "ray", Run: func(ctx context.Context) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := c.Version(rctx)
		if err != nil {
			return "", err
		}
		nodes, err := c.Nodes(rctx)
		if err != nil {
			return "", err
		}
		heads, workers := 0, 0
		var gpus float64
		for _, n := range nodes {
			if !n.Alive() || (nodeIP != "" && n.NodeIP != nodeIP) {
				continue
			}
			if n.IsHeadNode {
				heads++
			} else {
				workers++
			}
			gpus += n.GPUs()
		}
		if heads != 1 || workers != wantWorkers || gpus != wantGPUs {
			return "", fmt.Errorf("the Ray %s cluster sees %d head(s), %d of %d workers, %g of %g GPUs alive", v.RayVersion, heads, workers, wantWorkers, gpus, wantGPUs)
		}
		return fmt.Sprintf("Ray %s: 1 head + %d workers ALIVE, %g GPUs", v.RayVersion, workers, gpus), nil
	}}
}
