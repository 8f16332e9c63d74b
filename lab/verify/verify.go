// Package verify is the instructor's verification of a lab (`mltrain
// verify`): one check per lab step, each ending pass, fail or skip with the
// evidence it read and, when it is not a pass, the next command to run.
//
// Checks run concurrently, each under its own timeout, and share what several
// of them read (the container list, Ray's nodes and jobs) through lazily
// computed values. Everything a check reads comes through Deps, so each
// failure branch is tested with fakes; System returns the real Deps.
//
// Verify never changes the lab: it creates no bucket, starts no container and
// submits no job. The one exception is the dataset check, which reads the
// volume through a short-lived helper container (as `mltrain data` does).
package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Status of one check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Groups, in report order.
const (
	GroupHost       = "host"
	GroupContainers = "containers"
	GroupGPU        = "gpu"
	GroupRay        = "ray"
	GroupMinIO      = "minio"
	GroupData       = "data"
	GroupMetrics    = "metrics"
	GroupJupyter    = "jupyter"
	GroupExercises  = "exercises"
)

// Groups lists every group in report order (what --only accepts).
var Groups = []string{GroupHost, GroupContainers, GroupGPU, GroupRay, GroupMinIO, GroupData, GroupMetrics, GroupJupyter, GroupExercises}

// Check is one verified lab step.
type Check struct {
	ID       string `json:"id"` // group.name, e.g. ray.auth
	Group    string `json:"group"`
	Title    string `json:"title"`
	Status   Status `json:"status"`
	Evidence string `json:"evidence"` // what was read; for a skip, why
	Fix      string `json:"fix,omitempty"`
	// Conditions are how a passed exercise ran where that is not the
	// course's lesson at full size (quick, fake data, reduced CPUs, CPU
	// rehearsal, shared GPU): such a pass is never shown as a plain one.
	Conditions []string `json:"conditions,omitempty"`
	Seconds    float64  `json:"seconds"`
}

// Report is the whole verification.
type Report struct {
	Project string    `json:"project"`
	Mode    plan.Mode `json:"mode"`
	OK      bool      `json:"ok"` // no check failed
	Passed  int       `json:"passed"`
	Failed  int       `json:"failed"`
	Skipped int       `json:"skipped"`
	// Conditional counts the passes earned under conditions (Check.Conditions).
	Conditional int       `json:"conditional"`
	Only        []string  `json:"only,omitempty"` // groups selected with --only (all when empty)
	Started     time.Time `json:"started"`
	Seconds     float64   `json:"seconds"`
	Checks      []Check   `json:"checks"`
	StateDir    state.Dir `json:"state_dir,omitempty"`
	// commands writes the verdict's command line (Options.Commands).
	commands nextstep.Commands
}

// Options tune Run.
type Options struct {
	// Only restricts the run to these groups; groups left out are not run
	// and do not appear in the report (Report.Only says which ran).
	Only []string
	// Timeout bounds each check (default 20 s); a check that runs out fails.
	Timeout time.Duration
	// DataFull counts every image in the dataset volume against the manifest
	// (food11.Verify) instead of reading the manifest alone.
	DataFull bool
	// Commands writes the fix column's command lines for the lab verified
	// (the user's --project and --state-dir).
	Commands nextstep.Commands
}

// RayAPI is the part of the Ray dashboard client the checks use; the
// client must send the lab's token.
type RayAPI interface {
	Nodes(ctx context.Context) ([]ray.Node, error)
	Jobs(ctx context.Context) ([]ray.Job, error)
}

// Store is the part of MinIO the checks read.
type Store interface {
	ListCheckpoints(ctx context.Context, bucket, prefix string) ([]store.Checkpoint, error)
	BucketPolicy(ctx context.Context, bucket string) (string, error)
}

// Deps are the verification's windows on the lab. State, Creds, Engine, Ray
// and HTTP are required; a nil func makes the checks needing it fail with a
// clear message rather than panic.
type Deps struct {
	State    state.State
	Creds    plan.Credentials
	StateDir state.Dir
	Engine   docker.Engine
	Ray      RayAPI
	// HTTP probes Prometheus, Grafana, Jupyter and Ray's own health routes
	// from this host (the State's Probes addresses).
	HTTP *http.Client
	// MinIO opens a store client with the given credentials.
	MinIO func(accessKey, secretKey string) (Store, error)
	// DetectGPUs is gpu.Detect on this host.
	DetectGPUs func(ctx context.Context) (gpu.Report, error)
	// Access returns nil when this user can read and write a /dev path.
	Access func(dev string) error
	// Manifest reads the dataset volume's manifest (nil when it has none).
	Manifest func(ctx context.Context, volume string) (*food11.Manifest, error)
	// DataVerify counts the volume's images (Options.DataFull).
	DataVerify func(ctx context.Context, volume string) (food11.Report, error)
	// Records are the exercises' saved observations.
	Records func() (map[string]exercise.Record, error)
	// GPUListCommand overrides the command listing a worker's GPUs by vendor
	// (default nvidia-smi --query-gpu=uuid --format=csv,noheader, rocminfo).
	GPUListCommand map[gpu.Vendor][]string
}

// ValidateOnly checks --only values and expands comma lists.
func ValidateOnly(only []string) ([]string, error) {
	var out []string
	for _, o := range only {
		for _, g := range strings.Split(o, ",") {
			g = strings.ToLower(strings.TrimSpace(g))
			if g == "" {
				continue
			}
			if !slices.Contains(Groups, g) {
				return nil, clierr.Hintf("use one or more of: "+strings.Join(Groups, ", ")+" (e.g. --only ray,minio)",
					"--only %q is not a check group", g)
			}
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out, nil
}

// spec is one check before it runs.
type spec struct {
	id, group, title string
	run              func(ctx context.Context, e *env) outcome
	// slow: with DataFull it reads the whole dataset, so it gets SlowTimeout.
	slow bool
}

// SlowTimeout bounds a check that reads a whole dataset (--data-full).
const SlowTimeout = 10 * time.Minute

type outcome struct {
	status   Status
	evidence string
	fix      string
	deadline bool  // failed because a call ran out of time
	err      error // what failed, when an error did: its own next step beats fix
	// conditions of a pass (Check.Conditions)
	conditions []string
}

func pass(format string, args ...any) outcome {
	return outcome{status: Pass, evidence: fmt.Sprintf(format, args...)}
}

func fail(fix, format string, args ...any) outcome {
	return outcome{status: Fail, evidence: fmt.Sprintf(format, args...), fix: fix}
}

func skip(format string, args ...any) outcome {
	return outcome{status: Skip, evidence: fmt.Sprintf(format, args...)}
}

// failErr turns an error into a failed outcome; its next step, when it
// has one, is the fix.
func failErr(err error, fix string) outcome {
	return outcome{status: Fail, evidence: err.Error(), fix: fix, deadline: errors.Is(err, context.DeadlineExceeded), err: err}
}

// cmd is the command line that runs words on the verified lab.
func (e *env) cmd(words ...string) string { return e.o.Commands.Line(words...) }

// Run performs the checks of the selected groups and returns the report.
// It never fails as a whole: what goes wrong is a failed check.
func Run(ctx context.Context, d Deps, o Options) Report {
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	start := time.Now()
	e := newEnv(ctx, d, o)
	rep := Report{Project: d.State.Project, Mode: d.State.Plan.Mode, Only: o.Only, Started: start.UTC(), StateDir: d.StateDir, commands: o.Commands}
	var specs []spec
	for _, s := range allSpecs(d.State.Plan) {
		if len(o.Only) == 0 || slices.Contains(o.Only, s.group) {
			specs = append(specs, s)
		}
	}
	rep.Checks = make([]Check, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timeout := o.Timeout
			if s.slow && o.DataFull {
				timeout = max(timeout, SlowTimeout)
			}
			rep.Checks[i] = runOne(ctx, e, s, timeout)
		}()
	}
	wg.Wait()
	sort.SliceStable(rep.Checks, func(i, j int) bool {
		return slices.Index(Groups, rep.Checks[i].Group) < slices.Index(Groups, rep.Checks[j].Group)
	})
	for _, c := range rep.Checks {
		switch c.Status {
		case Pass:
			rep.Passed++
			if len(c.Conditions) > 0 {
				rep.Conditional++
			}
		case Fail:
			rep.Failed++
		case Skip:
			rep.Skipped++
		}
	}
	rep.OK = rep.Failed == 0
	rep.Seconds = time.Since(start).Seconds()
	return rep
}

// runOne runs a check under its timeout. A check stuck past it is reported
// as failed; its goroutine finishes in the background when its calls return.
func runOne(ctx context.Context, e *env, s spec, timeout time.Duration) Check {
	c := Check{ID: s.id, Group: s.group, Title: s.title}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil { // a bug in one check must not take the report down
				done <- outcome{status: Fail, evidence: fmt.Sprintf("internal error in check %s: %v", s.id, r),
					fix: "report this as an mltrain bug, with '" + e.cmd("verify", "--json") + "'"}
			}
		}()
		done <- s.run(cctx, e)
	}()
	timedOut := func(detail string) outcome {
		return outcome{status: Fail, evidence: fmt.Sprintf("no answer within %s (%s)", timeout, detail),
			fix: "run '" + e.cmd("status") + "' to see which service hangs, or raise --timeout"}
	}
	var out outcome
	select {
	case out = <-done:
		// A call cut by a deadline fails with a context error: say it timed out.
		if out.status == Fail && (out.deadline || cctx.Err() != nil) && ctx.Err() == nil {
			out = timedOut(out.evidence)
		}
	case <-cctx.Done():
		out = timedOut(cctx.Err().Error())
	}
	if out.status == Fail && out.err != nil {
		if h := e.o.Commands.Hint(out.err); h != "" {
			out.fix = h
		}
	}
	if out.status == Fail && out.fix == "" {
		out.fix = "run '" + e.cmd("status") + "'"
	}
	c.Status, c.Evidence, c.Fix = out.status, out.evidence, out.fix
	if out.status == Pass {
		c.Conditions = out.conditions
	}
	c.Seconds = time.Since(t0).Seconds()
	return c
}

// allSpecs lists the checks for a plan, in report order within each group.
func allSpecs(p plan.Plan) []spec {
	var s []spec
	s = append(s, hostSpecs()...)
	s = append(s, containerSpecs(p)...)
	s = append(s, gpuSpecs()...)
	s = append(s, raySpecs()...)
	s = append(s, minioSpecs()...)
	s = append(s, dataSpecs()...)
	s = append(s, metricsSpecs()...)
	s = append(s, jupyterSpecs()...)
	s = append(s, exerciseSpecs()...)
	return s
}

// env is one run's shared state: the deps and what several checks read.
type env struct {
	d          Deps
	o          Options
	plan       plan.Plan
	containers func() (map[string]docker.ContainerDetails, error) // by service
	nodes      func() ([]ray.Node, error)
	jobs       func() (map[string]ray.Job, error) // by submission id
	dashboards func() ([]grafanaDash, error)
	records    func() (map[string]exercise.Record, error)
}

func newEnv(ctx context.Context, d Deps, o Options) *env {
	e := &env{d: d, o: o, plan: d.State.Plan}
	// Shared reads run once, under their own timeout, so one check timing
	// out does not leave the others with a cancelled result.
	shared := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, o.Timeout) }
	e.containers = sync.OnceValues(func() (map[string]docker.ContainerDetails, error) {
		c, cancel := shared()
		defer cancel()
		return e.readContainers(c)
	})
	e.nodes = sync.OnceValues(func() ([]ray.Node, error) {
		if d.Ray == nil {
			return nil, fmt.Errorf("no Ray client configured")
		}
		c, cancel := shared()
		defer cancel()
		return d.Ray.Nodes(c)
	})
	e.jobs = sync.OnceValues(func() (map[string]ray.Job, error) {
		if d.Ray == nil {
			return nil, fmt.Errorf("no Ray client configured")
		}
		c, cancel := shared()
		defer cancel()
		js, err := d.Ray.Jobs(c)
		if err != nil {
			return nil, err
		}
		out := map[string]ray.Job{}
		for _, j := range js {
			out[j.ID()] = j
		}
		return out, nil
	})
	e.dashboards = sync.OnceValues(func() ([]grafanaDash, error) {
		c, cancel := shared()
		defer cancel()
		return e.searchDashboards(c)
	})
	e.records = sync.OnceValues(func() (map[string]exercise.Record, error) {
		if d.Records == nil {
			return nil, fmt.Errorf("no exercise records configured")
		}
		return d.Records()
	})
	return e
}
