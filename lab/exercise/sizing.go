package exercise

import (
	"context"
	"fmt"
	"math"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
)

// Request is what the course asks of each of an exercise's jobs or
// training workers: CPUs, and how many of them must fit on one worker node
// at once (two for fractional's half-GPU jobs and Tune's half-GPU trials).
type Request struct {
	CPUs    float64
	PerNode int
}

// Sizing is how an exercise's CPU requests were chosen, kept in its record:
// the course's numbers where they fit this lab's workers, the largest that
// fits otherwise, or --cpus.
type Sizing struct {
	Course   float64 `json:"course_cpus"`         // what the course asks
	Asked    float64 `json:"asked_cpus"`          // what this run asked
	NodeCPUs float64 `json:"node_cpus,omitempty"` // the smallest GPU worker's CPUs, as Ray lists them
	Flag     bool    `json:"cpus_flag,omitempty"` // --cpus chose Asked
	Why      string  `json:"why,omitempty"`       // said when Asked is not Course
}

// Reduced: the run asked less than the course does.
func (s Sizing) Reduced() bool { return s.Asked > 0 && s.Asked < s.Course }

// size fits req to workers of nodeCPUs CPUs (0: unknown, the course's
// numbers); cpus (--cpus) overrides, but a value no worker can hold, or one
// that keeps two from sharing a worker where the exercise needs them to,
// is refused before anything is submitted.
func size(name string, req Request, cpus, nodeCPUs float64) (Sizing, error) {
	s := Sizing{Course: req.CPUs, Asked: req.CPUs, NodeCPUs: nodeCPUs}
	perNode := float64(max(req.PerNode, 1))
	fits := halves(nodeCPUs / perNode)
	if cpus > 0 {
		s.Asked, s.Flag = cpus, true
		if nodeCPUs > 0 && cpus*perNode > nodeCPUs {
			what := fmt.Sprintf("this lab's workers have %g CPUs", nodeCPUs)
			if perNode > 1 {
				what += fmt.Sprintf(" and %s needs %g of its jobs on one worker at once", name, perNode)
			}
			return s, clierr.WithCode(clierr.Hintf(fmt.Sprintf("use --cpus %g, or leave --cpus out to size the requests to the lab", max(fits, 0.5)),
				"--cpus %g: %s", cpus, what), clierr.ExitUsage)
		}
		if cpus != req.CPUs {
			s.Why = fmt.Sprintf("%g CPUs asked by the course; --cpus asks %g", req.CPUs, cpus)
		}
		return s, nil
	}
	if nodeCPUs <= 0 || req.CPUs*perNode <= nodeCPUs {
		return s, nil
	}
	s.Asked = max(fits, 0.5)
	s.Why = fmt.Sprintf("%g CPUs asked by the course; this lab's workers have %g: asking %g", req.CPUs, nodeCPUs, s.Asked)
	if perNode > 1 {
		s.Why = fmt.Sprintf("%g CPUs asked by the course; this lab's workers have %g and %g jobs share one: asking %g each",
			req.CPUs, nodeCPUs, perNode, s.Asked)
	}
	return s, nil
}

// halves rounds v down to a multiple of 0.5: Ray's CPU requests are
// logical and may be fractional.
func halves(v float64) float64 { return math.Floor(v*2) / 2 }

// workerCPUs is the smallest CPU total of the ALIVE worker nodes with a
// GPU, as Ray lists them (0 when there is none): a request that fits it
// fits whichever worker Ray picks, the fault exercise's second one too.
func workerCPUs(ctx context.Context, c *ray.Client) (float64, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	least := 0.0
	for _, n := range nodes {
		if !n.Alive() || n.GPUs() <= 0 {
			continue
		}
		if cpu := n.ResourcesTotal["CPU"]; least == 0 || cpu < least {
			least = cpu
		}
	}
	return least, nil
}
