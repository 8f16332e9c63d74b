// Package raytest hosts Ray's double in process: the dashboard's HTTP API as
// internal/ray/raymodel serves it (the model the stand-in Ray of the
// container tests runs too), on a test server that records the calls.
//
// There is one Ray double and no scripted one. A test that needs a job to
// print or do something scripts the job's program (Script, or the knobs of
// raymodel.TrainPy, which plays workspace/train.py) and moves the model's
// clock (Clock); where the job runs, how a stop, a package or a stopped
// node behaves are Ray's rules as the model keeps them.
package raytest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// Modelled is a modelled Ray cluster and its dashboard. Jobs are placed by
// their entrypoint resources, a stop of a never-placed job does nothing,
// packages expire, a head restart is a new cluster; every timing is the
// Config's (Ray's by default). Set Run for the programs jobs run (nil: a
// started job runs until it is stopped).
type Modelled struct {
	*raymodel.Cluster
	URL   string // the dashboard's address
	Token string // the token it demands ("" for none), as started

	srv   *httptest.Server
	api   http.Handler
	mu    sync.Mutex
	calls []string
	clock *Clock
	tick  time.Duration
	later bool
}

// LabNodes are the lab's Ray nodes in a CPU rehearsal or on two GPUs: a
// CPU-only head and two workers with one GPU each.
func LabNodes() []raymodel.NodeSpec {
	return []raymodel.NodeSpec{
		{IP: "172.18.0.2", Head: true, Total: raymodel.Resources{"CPU": 4}},
		{IP: "172.18.0.3", Total: raymodel.Resources{"CPU": 32, "GPU": 1}},
		{IP: "172.18.0.4", Total: raymodel.Resources{"CPU": 32, "GPU": 1}},
	}
}

// NewModel starts a modelled dashboard (token auth when token is set) with
// these nodes joined, closed when the test ends.
func NewModel(t testing.TB, cfg raymodel.Config, token string, nodes ...raymodel.NodeSpec) *Modelled {
	m := &Modelled{Cluster: raymodel.New(cfg), Token: token}
	for _, n := range nodes {
		m.Join(n)
	}
	m.api = raymodel.Handler(m.Cluster, token)
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL
	t.Cleanup(m.srv.Close)
	return m
}

// NewLab is NewModel with Ray's timings and the lab's nodes (LabNodes).
func NewLab(t testing.TB, token string) *Modelled {
	return NewModel(t, raymodel.Config{}, token, LabNodes()...)
}

// Close stops the dashboard: Ray is unreachable from then on.
func (m *Modelled) Close() { m.srv.Close() }

// Calls lists "METHOD path" of every request, in order.
func (m *Modelled) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

// CallsWithPrefix lists the calls whose "METHOD path" starts with prefix.
func (m *Modelled) CallsWithPrefix(prefix string) []string {
	var out []string
	for _, c := range m.Calls() {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// JoinNodes registers a raylet per row, in order, as the row describes its
// node (id, address, head, resources, labels). A row listed DEAD is a
// raylet that stopped answering longer ago than the GCS health checks
// take: Ray lists it DEAD.
func (m *Modelled) JoinNodes(rows ...ray.Node) {
	for _, r := range rows {
		id := m.Join(raymodel.NodeSpec{ID: r.NodeID, IP: r.NodeIP, Head: r.IsHeadNode,
			Total: raymodel.Resources(r.ResourcesTotal), Labels: r.Labels})
		if !r.Alive() {
			m.Died(id)
		}
	}
}

// Died says node id's raylet stopped answering longer ago than the GCS
// health checks take to give up on it: from now on Ray lists it DEAD.
func (m *Modelled) Died(id string) bool {
	_, longest := m.Config().DeadAfter()
	return m.Silence(id, m.Config().Now().Add(-longest))
}

// Tick makes every request the dashboard answers first move c (the
// model's clock) on by d: the model's time goes with the test's polls,
// whatever the machine's speed, as the polls of a runner under test want.
func (m *Modelled) Tick(c *Clock, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock, m.tick = c, d
}

// LaterRay makes the dashboard answer as a later Ray may: the answer and
// every object in a list of it carry a field Ray 2.54 does not send, which
// a client must ignore.
func (m *Modelled) LaterRay() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.later = true
}

func (m *Modelled) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.calls = append(m.calls, r.Method+" "+r.URL.Path)
	if m.clock != nil {
		m.clock.Add(m.tick)
	}
	later := m.later
	m.mu.Unlock()
	if !later {
		m.api.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	m.api.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var v any
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && json.Unmarshal(body, &v) == nil {
		var b bytes.Buffer
		_ = json.NewEncoder(&b).Encode(laterFields(v, true))
		body = b.Bytes()
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// laterFields adds the later Ray's field to v when add is set and to every
// object of a list inside it; the objects a row holds (resources, labels,
// metadata) keep their shape.
func laterFields(v any, add bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = laterFields(e, false)
		}
		if add {
			x["later_ray_field"] = map[string]any{"added_in": "a Ray after 2.54"}
		}
	case []any:
		for i, e := range x {
			x[i] = laterFields(e, true)
		}
	}
	return v
}
