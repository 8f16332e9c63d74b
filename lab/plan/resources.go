package plan

import (
	"fmt"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/progress"
)

// size splits the host's CPUs and memory between the head and the workers.
func size(p *Plan, facts host.Facts, opts Options, workers int) error {
	reserve := 1
	switch {
	case facts.CPUs >= 16:
		reserve = cpuReserved
	case facts.CPUs >= 4:
		reserve = 2
	}
	p.Head.CPUs = reserve
	if opts.HeadCPUs > 0 {
		p.Head.CPUs = opts.HeadCPUs
	}
	perWorker := max(1, (facts.CPUs-reserve)/workers)
	if opts.WorkerCPUs > 0 {
		perWorker = opts.WorkerCPUs
	}

	mem := facts.MemoryBytes
	shm := clamp(mem*shmPercent/100/int64(workers), shmMin, shmMaxPer)
	if opts.WorkerShm > 0 {
		shm = opts.WorkerShm
		if total := shm * int64(workers); total > mem {
			return clierr.Hintf("give a smaller --shm-size, or leave it out to use about 30% of memory",
				"--shm-size %s x %d workers = %s exceeds the host's memory (%s)", progress.Bytes(shm), workers, progress.Bytes(total), progress.Bytes(mem))
		}
	}
	shm = shm / mib * mib
	p.Head.ShmBytes = clamp(mem*headShmPct/100, shmMin, headShmMax) / mib * mib
	if total := shm*int64(workers) + p.Head.ShmBytes; total > mem*3/4 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("shared memory (%s) is more than 3/4 of the host's memory (%s): large jobs may be killed",
			progress.Bytes(total), progress.Bytes(mem)))
	}
	for i := range p.Workers {
		p.Workers[i].CPUs = perWorker
		p.Workers[i].ShmBytes = shm
	}
	return nil
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }
