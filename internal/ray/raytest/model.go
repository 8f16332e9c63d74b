package raytest

import (
	"net/http/httptest"
	"testing"

	"github.com/mltrain/mltrain/internal/ray/raymodel"
)

// Modelled is the double as Ray behaves rather than as a test scripts it:
// the dashboard API served by raymodel (the same model the stand-in Ray of
// the container tests runs). Jobs are placed by their entrypoint resources,
// a stop of a never-placed job does nothing, packages expire, a head restart
// is a new cluster; every timing is the Config's (Ray's by default).
type Modelled struct {
	*raymodel.Cluster
	URL string // the dashboard's address
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
	c := raymodel.New(cfg)
	for _, n := range nodes {
		c.Join(n)
	}
	srv := httptest.NewServer(raymodel.Handler(c, token))
	t.Cleanup(srv.Close)
	return &Modelled{Cluster: c, URL: srv.URL}
}
