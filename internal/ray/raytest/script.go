package raytest

import (
	"sync"
	"time"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// Script is a job's program a test writes, where raymodel.TrainPy does not
// play what the test needs: the driver prints Start when Ray starts it,
// runs for Run on the model's clock, then prints End and exits with Code
// (non-zero: Ray fails the job). Ray's rules apply around it: it starts
// only once Ray placed the job, a stop ends it, its exit ends the job.
type Script struct {
	Start, End string
	Run        time.Duration
	Code       int
}

// Program is a raymodel.Cluster's Run for jobs that all run s.
func (s Script) Program(*raymodel.Job) raymodel.Program { return &script{s: s} }

type script struct {
	s       Script
	started time.Time
}

func (p *script) Step(d *raymodel.Driver) (bool, int) {
	if p.started.IsZero() {
		p.started = d.Now
		d.Log(p.s.Start)
	}
	if d.Now.Sub(p.started) < p.s.Run {
		return false, 0
	}
	d.Log(p.s.End)
	return true, p.s.Code
}

// Clock is a model clock the test drives (raymodel.Config.Now): it stands
// still until Add moves it, or Modelled.Tick does on every request.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
