package raymodel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The markers of workspace/train.py's log contract (its docstring).
const (
	EventMarker  = "MLTRAIN_EVENT"
	ResultMarker = "MLTRAIN_RESULT"
)

// TrainPy plays workspace/train.py on the model, in the model's time:
// --mode plain (Lightning on the entrypoint's GPU), ray (a Ray Train V2
// TorchTrainer: a PACK placement group of --workers bundles, checkpoints
// written to storage before they are reported, restarts on another node
// from the latest registered checkpoint, at most --max-failures times) and
// tune (ASHA over --num-samples trials, see tune.go). Its log lines follow
// train.py's event contract, so lab/exercise reads them as it reads Ray's.
type TrainPy struct {
	Epoch    time.Duration // one epoch (default 2 s)
	Register time.Duration // from a checkpoint's upload to its registration (default Epoch/4)
	Restart  time.Duration // from a worker group failure to the new group (default 2 s)
	// TrialEnd overrides how Tune trial i ends ("" leaves it to ASHA):
	// EndScript at iteration n, or EndError.
	TrialEnd func(trial int) (end string, at int)
	// Unannounced plays a train.py older than the "driver" and
	// "checkpoint" events: it trains and checkpoints alike, saying neither.
	Unannounced bool
	// ResumeFrom plays a train.py that resumes a restarted worker group from
	// a checkpoint of its own choosing, not the one Ray Train hands it:
	// given the epoch of Ray's (-1: none), it returns the epoch it says it
	// resumed from (-1: from scratch). nil is train.py's own way: Ray's.
	ResumeFrom func(handed int) int
}

// Tune trial ends, as train.py's tune result names them.
const (
	EndMaxT      = "max_t"
	EndScheduler = "scheduler"
	EndScript    = "script"
	EndError     = "error"
)

// Program returns the program for a job whose entrypoint runs train.py;
// `sleep N` sleeps N seconds; other entrypoints succeed at once.
func (t TrainPy) Program(j *Job) Program {
	a := parseArgs(j.Request.Entrypoint)
	if a.run == "" {
		// train.py's default: the job's submission id, which Ray hands the
		// driver in RAY_JOB_CONFIG_JSON_ENV_VAR's metadata.
		a.run = "food11-" + a.mode + "-" + j.ID
	}
	if f := strings.Fields(j.Request.Entrypoint); len(f) == 2 && f[0] == "sleep" {
		n, _ := strconv.ParseFloat(f[1], 64)
		return &sleepRun{d: time.Duration(n * float64(time.Second))}
	}
	if !strings.Contains(j.Request.Entrypoint, "train.py") {
		return exitNow{}
	}
	if t.Epoch <= 0 {
		t.Epoch = 2 * time.Second
	}
	if t.Register <= 0 {
		t.Register = t.Epoch / 4
	}
	if t.Restart <= 0 {
		t.Restart = 2 * time.Second
	}
	if a.mode == "tune" {
		return &tuneRun{t: t, a: a}
	}
	return &trainRun{t: t, a: a}
}

type args struct {
	mode, run, storage           string
	workers, epochs, maxFailures int
	keep, samples, concurrent    int
	gpu, cpus                    float64
	quick                        bool
}

func parseArgs(entry string) args {
	a := args{mode: "plain", workers: 1, samples: 16, concurrent: 4, keep: -1, gpu: -1, cpus: -1, storage: "s3://ray"}
	f := strings.Fields(entry)
	val := func(i int) string {
		if i+1 < len(f) {
			return strings.Trim(f[i+1], "'")
		}
		return ""
	}
	for i, w := range f {
		n, _ := strconv.Atoi(val(i))
		x, _ := strconv.ParseFloat(val(i), 64)
		switch w {
		case "--mode":
			a.mode = val(i)
		case "--run-name":
			a.run = val(i)
		case "--storage-path":
			a.storage = val(i)
		case "--workers":
			a.workers = n
		case "--epochs":
			a.epochs = n
		case "--max-failures":
			a.maxFailures = n
		case "--keep-checkpoints":
			a.keep = n
		case "--num-samples":
			a.samples = n
		case "--max-concurrent-trials":
			a.concurrent = n
		case "--gpu-fraction":
			a.gpu = x
		case "--cpus-per-worker":
			a.cpus = x
		case "--quick":
			a.quick = true
		}
	}
	if a.epochs <= 0 {
		a.epochs = 20
		if a.quick {
			a.epochs = 2
		}
	}
	defaults := map[string][3]float64{"ray": {1, 8, 2}, "tune": {0.5, 4, 1}} // gpu, cpus, keep
	d := defaults[a.mode]
	if a.gpu < 0 {
		a.gpu = d[0]
	}
	if a.cpus < 0 {
		a.cpus = d[1]
	}
	if a.keep < 0 {
		a.keep = int(d[2])
	}
	return a
}

// bucket is the S3 bucket of --storage-path (s3://ray -> ray).
func (a args) bucket() string {
	b, _, _ := strings.Cut(strings.TrimPrefix(a.storage, "s3://"), "/")
	return b
}

// trainRun is --mode plain and --mode ray.
type trainRun struct {
	t          TrainPy
	a          args
	started    time.Time
	group      []*Alloc
	epoch      int       // the epoch being trained
	epochEnd   time.Time // when it ends
	pending    *ckpt     // uploaded, not yet registered
	registered []ckpt
	failures   int
	restartAt  time.Time // zero unless a failed group waits to restart
}

type ckpt struct {
	epoch   int
	name    string
	at      time.Time // registration time (pending: when it registers)
	deleted bool
}

func (r *trainRun) Step(d *Driver) (bool, int) {
	now := d.Now
	if r.started.IsZero() {
		r.started = now
		d.Log(event("", "start", now, map[string]any{"mode": r.a.mode, "run": r.a.run, "node_ip": d.NodeIP()}))
		if r.a.mode == "plain" {
			d.Log(event("", "worker", now, map[string]any{"mode": "plain", "rank": 0, "world_size": 1,
				"node_ip": d.NodeIP(), "gpu": map[string]any{"name": "stand-in"}, "run": r.a.run}))
			r.epochEnd = now.Add(r.t.Epoch)
		} else if !r.t.Unannounced {
			id, ip := d.AttachedNode()
			d.Log(event("", "driver", now, map[string]any{"mode": r.a.mode, "run": r.a.run, "node_id": id, "node_ip": ip}))
		}
		if r.a.mode != "plain" {
			if err := r.loadSnapshot(d); err != nil {
				d.Log(ResultMarker + " " + mustJSON(map[string]any{"mode": "ray", "run": r.a.run, "ok": false,
					"error": "CheckpointManagerInitializationError: " + err.Error(), "fit_seconds": 0}) + "\n")
				return true, 1
			}
		}
	}
	if r.a.mode == "plain" {
		return r.stepPlain(d)
	}
	for _, a := range r.group {
		if a.Lost() {
			return r.fail(d, a)
		}
	}
	if r.group == nil {
		if now.Before(r.restartAt) || !r.place(d) {
			return false, 0
		}
	}
	for {
		if r.pending != nil && !now.Before(r.pending.at) {
			r.register(d)
		} else if r.pending == nil && r.epoch < r.a.epochs && !now.Before(r.epochEnd) {
			r.endEpoch(d)
		} else {
			break
		}
	}
	if r.epoch >= r.a.epochs && r.pending == nil {
		res := map[string]any{"mode": "ray", "run": r.a.run, "workers": r.a.workers, "ok": true,
			"max_failures": r.a.maxFailures, "keep_checkpoints": r.a.keep, "fit_seconds": round1(now.Sub(r.started))}
		if n := len(r.registered); n > 0 {
			res["checkpoint"] = r.path(r.registered[n-1].name)
		}
		d.Log(ResultMarker + " " + mustJSON(res) + "\n")
		return true, 0
	}
	return false, 0
}

func (r *trainRun) stepPlain(d *Driver) (bool, int) {
	for r.epoch < r.a.epochs && !d.Now.Before(r.epochEnd) {
		d.Log(event("", "epoch", r.epochEnd, map[string]any{"epoch": r.epoch, "run": r.a.run, "metrics": metrics(r.epoch)}))
		r.epoch++
		r.epochEnd = r.epochEnd.Add(r.t.Epoch)
	}
	if r.epoch < r.a.epochs {
		return false, 0
	}
	d.Log(ResultMarker + " " + mustJSON(map[string]any{"mode": "plain", "run": r.a.run, "epochs": r.a.epochs,
		"fit_seconds": round1(d.Now.Sub(r.started)), "test": map[string]any{"test_accuracy": 0.5},
		"node_ip": d.NodeIP()}) + "\n")
	return true, 0
}

// place starts a worker group: the placement group, then every rank's
// "worker" event, and rank 0's "resume" when Ray hands it a checkpoint.
func (r *trainRun) place(d *Driver) bool {
	b := Resources{"CPU": r.a.cpus, "GPU": r.a.gpu}
	bundles := make([]Resources, r.a.workers)
	for i := range bundles {
		bundles[i] = b
	}
	g, ok := d.AcquireGroup(bundles)
	if !ok {
		return false
	}
	r.group = g
	for rank, a := range g {
		d.Log(event(a.NodeIP, "worker", d.Now, map[string]any{"mode": "ray", "rank": rank, "world_size": len(g),
			"node_ip": a.NodeIP, "node_id": a.NodeID, "gpu": map[string]any{"name": "stand-in"}, "run": r.a.run}))
	}
	r.epoch = 0
	from := -1
	if n := len(r.registered); n > 0 {
		from = r.registered[n-1].epoch // a reloaded snapshot's latest, too
	}
	if r.t.ResumeFrom != nil && r.failures > 0 {
		from = r.t.ResumeFrom(from)
	}
	if from >= 0 {
		name := checkpointName(from)
		d.Log(event(g[0].NodeIP, "resume", d.Now, map[string]any{"mode": "ray", "rank": 0, "checkpoint": r.path(name),
			"name": name, "epoch": from, "node_ip": g[0].NodeIP, "node_id": g[0].NodeID, "run": r.a.run}))
		r.epoch = from + 1
	}
	r.epochEnd = d.Now.Add(r.t.Epoch)
	return true
}

// endEpoch: rank 0 validates, writes the checkpoint's objects to storage,
// then reports it; the controller registers it Register later.
func (r *trainRun) endEpoch(d *Driver) {
	at := r.epochEnd
	d.Log(event(r.group[0].NodeIP, "epoch", at, map[string]any{"epoch": r.epoch, "run": r.a.run, "metrics": metrics(r.epoch)}))
	cp := ckpt{epoch: r.epoch, name: checkpointName(r.epoch), at: at.Add(r.t.Register)}
	if s := d.Storage(); s != nil {
		meta := mustJSON(map[string]any{"epoch": r.epoch, "run": r.a.run})
		if err := s.Put(r.a.bucket(), r.a.run+"/"+cp.name+"/checkpoint.ckpt", []byte("stand-in checkpoint\n")); err != nil {
			d.Log("checkpoint upload failed: " + err.Error() + "\n")
		}
		_ = s.Put(r.a.bucket(), r.a.run+"/"+cp.name+"/mltrain.json", []byte(meta))
	}
	r.pending = &cp
	r.epoch++
	r.epochEnd = at.Add(r.t.Epoch)
}

// register makes the pending checkpoint the controller's, prints rank 0's
// event (train.py prints it only now) and keeps the newest --keep-checkpoints.
func (r *trainRun) register(d *Driver) {
	cp := *r.pending
	r.pending = nil
	r.registered = append(r.registered, cp)
	if !r.t.Unannounced {
		d.Log(event(r.group[0].NodeIP, "checkpoint", cp.at, map[string]any{"mode": "ray", "run": r.a.run, "rank": 0,
			"epoch": cp.epoch, "checkpoint": r.path(cp.name), "name": cp.name, "node_ip": r.group[0].NodeIP, "registered": true}))
	}
	var drop []*ckpt
	for i := 0; r.a.keep > 0 && i < len(r.registered)-r.a.keep; i++ {
		if c := &r.registered[i]; !c.deleted {
			c.deleted = true // the bookkeeping first, then the snapshot, then the deletes (as Ray)
			drop = append(drop, c)
		}
	}
	r.writeSnapshot(d, cp)
	for _, c := range drop {
		if s := d.Storage(); s != nil {
			_ = s.Delete(r.a.bucket(), r.a.run+"/"+c.name+"/checkpoint.ckpt")
			_ = s.Delete(r.a.bucket(), r.a.run+"/"+c.name+"/mltrain.json")
		}
	}
}

// fail: a worker's node stopped. The report in flight dies with it; the
// group restarts Restart later unless max_failures is spent.
func (r *trainRun) fail(d *Driver, lost *Alloc) (bool, int) {
	r.failures++
	r.pending = nil
	d.Release(r.group...)
	r.group = nil
	d.Log(fmt.Sprintf("Worker group failed: the node %s running a training worker died (failure %d of at most %d).\n", lost.NodeIP, r.failures, r.a.maxFailures))
	if r.failures > r.a.maxFailures {
		d.Log(ResultMarker + " " + mustJSON(map[string]any{"mode": "ray", "run": r.a.run, "ok": false,
			"error":       fmt.Sprintf("TrainingFailedError: training failed after %d worker group failures", r.failures),
			"fit_seconds": round1(d.Now.Sub(r.started))}) + "\n")
		return true, 1
	}
	r.restartAt = d.Now.Add(r.t.Restart)
	return false, 0
}

func checkpointName(epoch int) string { return fmt.Sprintf("checkpoint_epoch_%06d", epoch) }

func (r *trainRun) path(name string) string {
	return strings.TrimPrefix(r.a.storage, "s3://") + "/" + r.a.run + "/" + name
}

func metrics(epoch int) map[string]float64 {
	return map[string]float64{"val_accuracy": 0.4 + 0.01*float64(epoch), "val_loss": 1 - 0.01*float64(epoch)}
}

func round1(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

// event is one event line as it reaches the job log: from a Ray worker when
// ip is set (Ray prefixes worker output), else from the driver.
func event(ip, kind string, at time.Time, fields map[string]any) string {
	return EventLine(ip, kind, at, fields, false)
}

// EventLine is one line of train.py's event contract as Ray's job log
// shows it: the Train worker's prefix when ip is set (with the ANSI colour
// Ray's log may carry around it, when colored), the marker, the JSON.
// Both Ray doubles write their logs with it.
func EventLine(ip, kind string, at time.Time, fields map[string]any, colored bool) string {
	rec := map[string]any{"event": kind, "time": float64(at.UnixNano()) / 1e9}
	for k, v := range fields {
		rec[k] = v
	}
	prefix := ""
	switch {
	case ip != "" && colored:
		prefix = fmt.Sprintf("\x1b[36m(RayTrainWorker pid=4242, ip=%s)\x1b[0m ", ip)
	case ip != "":
		prefix = fmt.Sprintf("(RayTrainWorker pid=4242, ip=%s) ", ip)
	}
	return prefix + EventMarker + " " + mustJSON(rec) + "\n"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
