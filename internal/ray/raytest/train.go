package raytest

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// TrainRun plays workspace/train.py's Ray Train run (--mode ray, one
// training worker, --max-failures) with the timing of Ray 2.54's Train V2,
// for the fault exercise. Call Step from Server.OnPoll: every GET of the job
// advances the run by one poll.
//
//   - The driver runs on the head when the entrypoint asks for no resources
//     (the exercise's case), so a worker that stops never ends the job; with
//     entrypoint GPUs it runs on Nodes[0] and dies with it.
//   - The driver attaches to a raylet Ray finds by its address: the head's,
//     unless nodes share the head's address (the host network of a lab
//     that accepts other hosts), when it may be any of them: DriverAttached
//     names that node's IP. train.py says which ("driver" event); a driver
//     whose raylet's node stops dies with it.
//   - Rank 0 trains on one worker node. At the end of each epoch Ray uploads
//     the checkpoint: its objects are in storage at once. Ray Train's
//     controller registers it RegisterPolls polls later; rank 0 is blocked
//     in train.py until then and prints the "checkpoint" event only after.
//   - After each registration Ray deletes all but the Keep newest registered
//     checkpoints (CheckpointConfig.num_to_keep); never the newest.
//   - When the training node goes down, the worker group fails and restarts
//     RestartPolls polls later on another node, from the latest REGISTERED
//     checkpoint ("resume" event; training goes on at its epoch+1), or from
//     scratch when none was registered (no resume event). An upload that was
//     never registered stays in storage, unused.
//   - After Epochs epochs: the MLTRAIN_RESULT line, then SUCCEEDED; after
//     more than MaxFailures failures: FAILED.
type TrainRun struct {
	Nodes         []string // worker node IPs, in the order Ray places the worker group
	Epochs        int      // default 10
	EpochPolls    int      // polls one epoch takes (default 3)
	RegisterPolls int      // polls from a checkpoint's upload to its registration (0: the same poll)
	RestartPolls  int      // polls from a failure to the restarted worker (default 2)
	Keep          int      // registered checkpoints kept in storage (0: all)
	MaxFailures   int      // default 2
	Bucket        string   // default "ray"
	// Put makes an object visible in storage; Delete removes one.
	Put    func(bucket, key string)
	Delete func(bucket, key string)
	// Down reports whether the node at ip has stopped (its container).
	Down func(ip string) bool
	// Unannounced plays a workspace whose train.py predates the checkpoint
	// and driver events: checkpoints are uploaded and registered, never
	// printed, and the driver does not say where it is attached.
	Unannounced bool
	// DriverAttached is the IP of the worker node whose raylet the driver
	// was handed; "" is the head's.
	DriverAttached string
	// ResumeFrom picks the registered checkpoint a restart gets, to play a
	// misbehaving Ray; nil gives Ray's choice, the latest.
	ResumeFrom func(registered []Checkpoint) *Checkpoint

	mu     sync.Mutex
	states map[string]*trainState
}

// Checkpoint is one checkpoint of a TrainRun.
type Checkpoint struct {
	Name    string // checkpoint_epoch_EEEEEE
	Epoch   int
	deleted bool
}

type trainState struct {
	started, restarting bool
	node                int // index in Nodes
	wait                int // polls left of the current epoch or restart
	epoch               int // the epoch being trained (0-based)
	pending             *Checkpoint
	pendingPolls        int
	registered          []Checkpoint
	failures            int
}

func (t *TrainRun) defaults() (epochs, epochPolls, restartPolls, maxFailures int, bucket string) {
	epochs, epochPolls, restartPolls, maxFailures, bucket = t.Epochs, t.EpochPolls, t.RestartPolls, t.MaxFailures, t.Bucket
	if epochs <= 0 {
		epochs = 10
	}
	if epochPolls <= 0 {
		epochPolls = 3
	}
	if restartPolls <= 0 {
		restartPolls = 2
	}
	if maxFailures <= 0 {
		maxFailures = 2
	}
	if bucket == "" {
		bucket = "ray"
	}
	return
}

// Registered lists the run's registered checkpoints, oldest first.
func (t *TrainRun) Registered(id string) []Checkpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.states[id]; ok {
		return append([]Checkpoint(nil), st.registered...)
	}
	return nil
}

// Step advances job id by one poll; it is meant for Server.OnPoll.
func (t *TrainRun) Step(id string, j *Job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[string]*trainState{}
	}
	st, ok := t.states[id]
	if !ok {
		st = &trainState{}
		t.states[id] = st
	}
	if j.Status.Terminal() {
		return
	}
	epochs, epochPolls, restartPolls, maxFailures, bucket := t.defaults()
	now := time.Now()
	driverOnWorker := j.Request.EntrypointNumGPUs > 0 || len(j.Request.EntrypointResources) > 0
	switch {
	case !st.started:
		st.started = true
		SetStatus(j, ray.Running, "Job is currently running.", now)
		j.Logs += line("", "start", now, map[string]any{"mode": "ray", "run": id})
		if !t.Unannounced {
			at := "node-head"
			if t.DriverAttached != "" {
				at = nodeID(t.DriverAttached)
			}
			j.Logs += line("", "driver", now, map[string]any{"mode": "ray", "run": id, "node_id": at})
		}
		if st.node = t.nextUp(-1); st.node < 0 {
			t.fail(j, "no worker node is up", now)
			return
		}
		j.Logs += t.workerEvent(id, st.node, now)
		st.wait = epochPolls
	case driverOnWorker && t.down(t.Nodes[0]):
		t.fail(j, "Job supervisor actor died: the node running the driver ("+t.Nodes[0]+") was stopped", now)
	case t.DriverAttached != "" && t.down(t.DriverAttached):
		t.fail(j, "the driver lost its raylet: the node "+t.DriverAttached+" it was attached to was stopped", now)
	case st.restarting:
		if st.wait--; st.wait > 0 {
			return
		}
		st.restarting = false
		if st.node = t.nextUp(st.node); st.node < 0 {
			t.fail(j, "no worker node left to restart training on", now)
			return
		}
		j.Logs += t.workerEvent(id, st.node, now)
		st.epoch = 0
		if cp := t.resumeFrom(st.registered); cp != nil {
			j.Logs += line(t.Nodes[st.node], "resume", now, map[string]any{"mode": "ray", "rank": 0, "run": id,
				"checkpoint": bucket + "/" + id + "/" + cp.Name, "name": cp.Name, "epoch": cp.Epoch,
				"node_ip": t.Nodes[st.node], "node_id": nodeID(t.Nodes[st.node])})
			st.epoch = cp.Epoch + 1
		}
		st.wait = epochPolls
	case t.down(t.Nodes[st.node]):
		// The report in flight dies with the worker: never registered.
		st.pending = nil
		st.failures++
		j.Logs += fmt.Sprintf("Worker group failed: the node %s running rank 0 died (failure %d of at most %d).\n", t.Nodes[st.node], st.failures, maxFailures)
		if st.failures > maxFailures {
			t.fail(j, fmt.Sprintf("Training failed after %d worker failures", st.failures), now)
			return
		}
		st.restarting, st.wait = true, restartPolls
	case st.pending != nil:
		if st.pendingPolls--; st.pendingPolls <= 0 {
			t.register(id, j, st, now)
		}
	case st.epoch >= epochs:
		res := map[string]any{"mode": "ray", "run": id, "ok": true, "max_failures": maxFailures, "keep_checkpoints": t.Keep}
		if n := len(st.registered); n > 0 {
			res["checkpoint"] = bucket + "/" + id + "/" + st.registered[n-1].Name
		}
		j.Logs += fmt.Sprintf("%s %s\n", raymodel.ResultMarker, mustJSON(res))
		SetStatus(j, ray.Succeeded, "Job finished successfully.", now)
	default:
		if st.wait--; st.wait > 0 {
			return
		}
		j.Logs += line(t.Nodes[st.node], "epoch", now, map[string]any{"epoch": st.epoch, "run": id,
			"metrics": map[string]float64{"val_accuracy": 0.4 + 0.01*float64(st.epoch)}})
		cp := Checkpoint{Name: fmt.Sprintf("checkpoint_epoch_%06d", st.epoch), Epoch: st.epoch}
		if t.Put != nil {
			t.Put(bucket, id+"/"+cp.Name+"/checkpoint.ckpt")
			t.Put(bucket, id+"/"+cp.Name+"/mltrain.json")
		}
		st.pending, st.pendingPolls = &cp, t.RegisterPolls
		st.epoch++
		st.wait = epochPolls
		if st.pendingPolls <= 0 {
			t.register(id, j, st, now)
		}
	}
}

// register makes the pending checkpoint Ray's, prints its event and applies
// the retention.
func (t *TrainRun) register(id string, j *Job, st *trainState, now time.Time) {
	_, _, _, _, bucket := t.defaults()
	cp := *st.pending
	st.pending = nil
	st.registered = append(st.registered, cp)
	if !t.Unannounced {
		j.Logs += line(t.Nodes[st.node], "checkpoint", now, map[string]any{"mode": "ray", "run": id, "rank": 0,
			"epoch": cp.Epoch, "checkpoint": bucket + "/" + id + "/" + cp.Name, "name": cp.Name,
			"node_ip": t.Nodes[st.node], "registered": true})
	}
	if t.Keep <= 0 {
		return
	}
	for i := 0; i < len(st.registered)-t.Keep; i++ {
		if c := &st.registered[i]; !c.deleted && t.Delete != nil {
			t.Delete(bucket, id+"/"+c.Name+"/checkpoint.ckpt")
			t.Delete(bucket, id+"/"+c.Name+"/mltrain.json")
			c.deleted = true
		}
	}
}

func (t *TrainRun) resumeFrom(registered []Checkpoint) *Checkpoint {
	if t.ResumeFrom != nil {
		return t.ResumeFrom(append([]Checkpoint(nil), registered...))
	}
	if len(registered) == 0 {
		return nil
	}
	cp := registered[len(registered)-1]
	return &cp
}

func (t *TrainRun) down(ip string) bool { return t.Down != nil && t.Down(ip) }

// nextUp is the first node after index prev (wrapping) that is up, other
// than prev itself; -1 when none.
func (t *TrainRun) nextUp(prev int) int {
	for k := 1; k <= len(t.Nodes); k++ {
		i := (prev + k) % len(t.Nodes)
		if prev < 0 {
			i = k - 1
		}
		if i != prev && !t.down(t.Nodes[i]) {
			return i
		}
	}
	return -1
}

func (t *TrainRun) fail(j *Job, msg string, now time.Time) {
	j.Logs += fmt.Sprintf("%s %s\n", raymodel.ResultMarker, mustJSON(map[string]any{"mode": "ray", "ok": false, "error": msg}))
	SetStatus(j, ray.Failed, msg, now)
}

func (t *TrainRun) workerEvent(id string, node int, now time.Time) string {
	ip := t.Nodes[node]
	return line(ip, "worker", now, map[string]any{"mode": "ray", "rank": 0, "world_size": 1, "node_ip": ip,
		"node_id": nodeID(ip), "gpu": map[string]any{"name": "A100"}, "run": id})
}

func nodeID(ip string) string { return "node-" + ip }

// line is one event line as it reaches the job log, coloured as Ray's
// worker prefix often is (the parser must see through it).
func line(ip, kind string, at time.Time, fields map[string]any) string {
	return raymodel.EventLine(ip, kind, at, fields, true)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
