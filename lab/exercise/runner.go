package exercise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/workspace"
)

// runner carries one exercise run.
type runner struct {
	env     Env
	o       Options
	ex      Exercise
	rec     Record
	runtime map[string]any // prepared once
	pkg     *ray.Package   // the working_dir package, pinned again before every submission
	dir     string         // the workspace submitted
	seq     int
	events  map[int][]Event // per job index, from the last log read
	sizing  Sizing          // the CPU requests fitted to the lab's workers
	// lastSaid is when the exercise last said a line (waitLine repeats a
	// wait's after waitSay of silence); awaiting is what runner.poll waits for.
	lastSaid time.Time
	awaiting string
}

func (r *runner) step() string { return "lab " + r.rec.Exercise }

func (r *runner) say(format string, args ...any) {
	r.lastSaid = r.env.Now()
	progress.Say(r.env.Reporter, r.step(), fmt.Sprintf(format, args...))
}

func (r *runner) number(name string, v float64, unit string) {
	r.rec.Numbers = append(r.rec.Numbers, Number{Name: name, Value: v, Unit: unit})
}

func (r *runner) problem(format string, args ...any) {
	r.rec.Problems = append(r.rec.Problems, fmt.Sprintf(format, args...))
}

func (r *runner) notObserved() error {
	return clierr.Hintf("read the record with '"+r.env.Commands.Line("lab", r.rec.Exercise, "--json")+"' and the job logs in the dashboard",
		"exercise %s: %w: %s", r.rec.Exercise, ErrNotObserved, strings.Join(r.rec.Problems, "; "))
}

// start checks Ray answers, readies the workspace and uploads it once.
func (r *runner) start(ctx context.Context) error {
	v, err := r.env.Ray.Version(ctx)
	if err != nil {
		return err
	}
	r.rec.RayVersion = v.RayVersion
	nodeCPUs, err := workerCPUs(ctx, r.env.Ray)
	if err != nil {
		return err
	}
	if r.sizing, err = size(r.ex.Name, r.ex.Request, r.o.CPUs, nodeCPUs); err != nil {
		return err
	}
	r.rec.Sizing = &r.sizing
	if r.sizing.Why != "" {
		r.say("%s", r.sizing.Why)
	}
	dir := r.env.Workspace
	if dir == "" {
		if r.env.StateDir == "" {
			return clierr.Hintf("pass --workspace DIR", "no workspace: neither --workspace nor a state directory was given")
		}
		dir = r.env.StateDir.File(plan.DefaultWorkspace)
		if written, err := workspace.Ensure(dir); err != nil {
			return err
		} else if len(written) > 0 {
			progress.Note(r.env.Reporter, fmt.Sprintf("wrote the lab workspace to %s (%s)", dir, strings.Join(written, ", ")))
		}
	}
	r.dir = dir
	if _, err := os.Stat(r.trainPy()); err != nil {
		return clierr.WithHint(fmt.Errorf("workspace %s has no train.py: %w", dir, err),
			"pass --workspace with the lab's workspace, or remove the directory to get a fresh copy")
	}
	env, err := ray.LoadRuntimeEnv(filepath.Join(dir, "runtime.json"))
	if err != nil {
		return err
	}
	env["working_dir"] = dir
	if len(r.env.JobEnv) > 0 {
		vars := map[string]any{}
		if old, ok := env["env_vars"].(map[string]any); ok {
			for k, v := range old {
				vars[k] = v
			}
		}
		for k, v := range r.env.JobEnv {
			vars[k] = v
		}
		env["env_vars"] = vars
	}
	r.say("packaging %s", dir)
	prep, err := r.env.Ray.PrepareRuntimeEnv(ctx, env, dir)
	if err != nil {
		return err
	}
	if prep.Package != nil {
		what := "already on the cluster"
		if prep.Uploaded {
			what = "uploaded"
		}
		r.say("workspace %s: %d files, %d KiB, %s", prep.Package.URI, prep.Package.Files, len(prep.Package.Zip)>>10, what)
	}
	r.runtime, r.pkg = prep.RuntimeEnv, prep.Package
	return nil
}

// trainPy is the script the jobs run, for messages.
func (r *runner) trainPy() string { return filepath.Join(r.dir, "train.py") }

// jobSpec is one submission.
type jobSpec struct {
	args    []string // train.py flags
	gpus    float64  // entrypoint resources (plain mode)
	cpus    float64
	runName bool // pass --run-name <submission id>
}

// cpus is what each job or training worker asks for: the exercise's
// request fitted to this lab's workers when the run started.
func (r *runner) cpus() float64 { return r.sizing.Asked }

func (r *runner) trainArgs(extra ...string) []string {
	args := append([]string(nil), extra...)
	if r.o.Quick {
		args = append(args, "--quick")
	}
	if r.o.FakeData {
		args = append(args, "--fake-data")
	}
	if r.o.Epochs > 0 {
		args = append(args, "--epochs", fmt.Sprint(r.o.Epochs))
	}
	return args
}

func newID(exercise string, now time.Time, n int) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("mltrain-%s-%s-%d-%s", exercise, now.UTC().Format("20060102-150405"), n, hex.EncodeToString(b))
}

// submit sends one job and records it.
func (r *runner) submit(ctx context.Context, js jobSpec) (int, error) {
	r.seq++
	id := newID(r.rec.Exercise, r.env.Now(), r.seq)
	args := js.args
	if js.runName {
		run := id
		if r.o.Resume != "" {
			run = r.o.Resume
		}
		args = append(append([]string(nil), args...), "--run-name", run)
	}
	entry := "python train.py " + shellJoin(args)
	if r.pkg != nil {
		// As 'ray job submit' does before every job: Ray deletes a package
		// no job references once the pin of its last GET expired (600 s),
		// so the GET pins it again and a PUT brings it back when gone.
		if _, err := r.env.Ray.UploadPackage(ctx, r.pkg); err != nil {
			return 0, err
		}
	}
	_, err := r.env.Ray.Submit(ctx, ray.SubmitRequest{
		Entrypoint: entry, SubmissionID: id, RuntimeEnv: r.runtime,
		Metadata:          map[string]string{"mltrain.exercise": r.rec.Exercise},
		EntrypointNumGPUs: js.gpus, EntrypointNumCPUs: js.cpus,
	})
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted mid-call: Ray may have taken the job all the
			// same, so the interrupted run's cleanup looks it up (status
			// unknown here) and ends it.
			r.rec.Jobs = append(r.rec.Jobs, JobRun{SubmissionID: id, Entrypoint: entry, URL: r.env.Ray.Address() + "/#/jobs/" + id})
		}
		return 0, err
	}
	r.rec.Jobs = append(r.rec.Jobs, JobRun{SubmissionID: id, Entrypoint: entry, Status: ray.Pending,
		URL: r.env.Ray.Address() + "/#/jobs/" + id})
	r.say("submitted %s: %s", id, entry)
	return len(r.rec.Jobs) - 1, nil
}

// wait follows job i until it is terminal and fills its JobRun; a FAILED job
// is an error carrying its last 50 log lines.
func (r *runner) wait(ctx context.Context, i int) (ray.Job, error) {
	jr := &r.rec.Jobs[i]
	wctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	pw := &pendingWatch{r: r, limit: r.o.Timeout}
	wl := r.waiting(wctx, "job "+jr.SubmissionID+" to end")
	j, err := r.env.Ray.Wait(wctx, jr.SubmissionID, ray.WaitOptions{Poll: r.o.Poll, OnChange: func(j ray.Job) {
		r.say("%s: %s", jr.SubmissionID, j.Status)
	}, OnPoll: func(j ray.Job) {
		pw.poll(wctx, j)
		wl.tick("it is " + string(j.Status))
	}})
	r.fill(ctx, i, j)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return j, clierr.Hintf("raise --timeout, or look at the job in the dashboard: "+jr.URL,
				"job %s still %s after %s", jr.SubmissionID, j.Status, r.o.Timeout)
		}
		return j, err
	}
	if j.Status == ray.Failed {
		logs, _ := r.env.Ray.Logs(ctx, jr.SubmissionID)
		return j, clierr.Hintf("open "+jr.URL+" for the whole log",
			"job %s FAILED (%s): %s\nlast log lines:\n%s", jr.SubmissionID, j.ErrorType, j.Message, LastLines(logs, 50))
	}
	return j, nil
}

// fill copies the job's state and what its log says into the record.
func (r *runner) fill(ctx context.Context, i int, j ray.Job) []Event {
	jr := &r.rec.Jobs[i]
	if j.Status != "" {
		jr.Status, jr.Message = j.Status, j.Message
		jr.Start, jr.End = j.Start(), j.End()
		jr.Seconds = j.Duration().Seconds()
	}
	logs, err := r.env.Ray.Logs(ctx, jr.SubmissionID)
	if err != nil {
		return nil
	}
	events, res := ParseLog(logs)
	if r.events == nil {
		r.events = map[int][]Event{}
	}
	r.events[i] = events
	jr.Result = res
	jr.NodeIPs, jr.NodeIDs = NodeIPs(events), NodeIDs(events)
	names := r.workerNames(ctx, jr.NodeIPs)
	jr.Containers = nil
	for _, ip := range jr.NodeIPs {
		if n, ok := names[ip]; ok {
			jr.Containers = append(jr.Containers, n)
		}
	}
	return events
}

func (r *runner) dashboard(path string) string { return r.env.Ray.Address() + path }

// shellJoin quotes args for the entrypoint (Ray runs it through a shell).
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:,+", c))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}

// look sets the record's "what to look at" lines: the job's page first.
func (r *runner) look(urls ...string) {
	r.rec.Look = nil
	for _, u := range urls {
		r.rec.Look = append(r.rec.Look, "open "+u)
	}
	r.rec.Look = append(r.rec.Look, r.ex.Look...)
	for _, l := range r.rec.Look {
		progress.Note(r.env.Reporter, l)
	}
}

// runJob submits one training job with its own run name, points the
// student at it and the dashboard page, and waits for it to end (the
// judge tells whether it ended well).
func (r *runner) runJob(ctx context.Context, args []string, page string) (int, error) {
	i, err := r.submit(ctx, jobSpec{args: args, runName: true})
	if err != nil {
		return 0, err
	}
	r.look(r.rec.Jobs[i].URL, r.dashboard(page))
	_, err = r.wait(ctx, i)
	return i, err
}

// poll reads job i's log every Poll until cond holds; a job that ends first
// is an error with its last log lines.
func (r *runner) poll(ctx context.Context, i int, cond func([]Event) (bool, error)) error {
	id := r.rec.Jobs[i].SubmissionID
	what := r.awaiting
	if what == "" {
		what = "job " + id + "'s log"
	}
	wl := r.waiting(ctx, what)
	for {
		logs, err := r.env.Ray.Logs(ctx, id)
		if err != nil {
			return err
		}
		events, _ := ParseLog(logs)
		ok, err := cond(events)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		j, err := r.env.Ray.Job(ctx, id)
		if err != nil {
			return err
		}
		if j.Status.Terminal() {
			r.fill(ctx, i, j)
			return clierr.Hintf("open "+r.rec.Jobs[i].URL+" for the whole log",
				"job %s ended %s too early (%s); last log lines:\n%s", id, j.Status, j.Message, LastLines(logs, 50))
		}
		wl.tick("job " + id + " is " + string(j.Status))
		if err := sleep(ctx, r.o.Poll); err != nil {
			return err
		}
	}
}

func (r *runner) timeoutHint(err error, ctx context.Context, what string) error {
	if ctx.Err() != nil {
		return clierr.Hintf("look at the job in the dashboard ("+r.rec.Jobs[len(r.rec.Jobs)-1].URL+"); raise --checkpoint-timeout or --timeout if it is just slow",
			"%s: %w", what, ctx.Err())
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
