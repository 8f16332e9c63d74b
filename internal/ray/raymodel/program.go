package raymodel

import "time"

// Program is what a job's driver runs, stepped by the model on its clock.
type Program interface {
	// Step runs the driver on to d.Now; done with the driver's exit code
	// once it has exited.
	Step(d *Driver) (done bool, code int)
}

// exitNow is an entrypoint that succeeds at once.
type exitNow struct{}

func (exitNow) Step(*Driver) (bool, int) { return true, 0 }

// sleepRun is `sleep N`: it exits 0 once N has passed.
type sleepRun struct {
	d     time.Duration
	until time.Time
}

func (s *sleepRun) Step(d *Driver) (bool, int) {
	if s.until.IsZero() {
		s.until = d.Now.Add(s.d)
	}
	return !d.Now.Before(s.until), 0
}

// Storage is where checkpoints go (the lab's MinIO, over S3 with the lab
// user's keys, in the stand-in).
type Storage interface {
	Put(bucket, key string, data []byte) error
	Delete(bucket, key string) error
}

// Driver is a running job as its program sees it.
type Driver struct {
	c   *Cluster
	j   *Job
	Now time.Time
}

// ID is the submission id.
func (d *Driver) ID() string { return d.j.ID }

// Entrypoint is the job's command line.
func (d *Driver) Entrypoint() string { return d.j.Request.Entrypoint }

// Log appends driver output to the job log.
func (d *Driver) Log(s string) { d.j.Logs += s }

// NodeIP is the address of the node running the driver.
func (d *Driver) NodeIP() string {
	if d.j.sup == nil {
		return ""
	}
	return d.j.sup.NodeIP
}

// AttachedNode is the node whose raylet the driver connected to: its own
// node's, or, where nodes share its address, whichever Ray handed it.
func (d *Driver) AttachedNode() (id, ip string) {
	if d.j.attached == nil {
		return "", ""
	}
	return d.j.attached.ID, d.j.attached.IP
}

// Acquire asks the scheduler for one task's or actor's resources; what
// cannot be placed now is a demand in the cluster status until it can.
func (d *Driver) Acquire(req Resources) (*Alloc, bool) {
	a, ok := d.c.acquire(req, nil)
	if !ok {
		d.j.want = append(d.j.want, demand{bundles: []Resources{req}})
		return nil, false
	}
	d.j.held = append(d.j.held, a)
	return a, true
}

// AcquireGroup asks for a placement group (PACK): all bundles or none.
func (d *Driver) AcquireGroup(bundles []Resources) ([]*Alloc, bool) {
	as, ok := d.c.acquireGroup(bundles)
	if !ok {
		d.j.want = append(d.j.want, demand{bundles: bundles, strategy: "PACK"})
		return nil, false
	}
	d.j.held = append(d.j.held, as...)
	return as, true
}

// Release gives allocations back.
func (d *Driver) Release(as ...*Alloc) {
	for _, a := range as {
		d.c.release(a)
		for i, h := range d.j.held {
			if h == a {
				d.j.held = append(d.j.held[:i], d.j.held[i+1:]...)
				break
			}
		}
	}
}

// Storage is the checkpoint storage (nil when the host has none).
func (d *Driver) Storage() Storage { return d.c.Storage }

// Feasible reports whether some ALIVE node could ever hold req.
func (d *Driver) Feasible(req Resources) bool { return d.c.feasible(req) }
