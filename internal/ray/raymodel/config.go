// Package raymodel is one model of the Ray 2.54 behaviour the lab relies on,
// shared by the in-process double (internal/ray/raytest) and the stand-in Ray
// of the container tests (lab/labtest/testdata/standin): one code, two hosts.
//
// It keeps a cluster's nodes (DEAD at once when a raylet unregisters on
// SIGTERM; ALIVE until the GCS health checks give up on a silent one, then
// DEAD), the resources the scheduler hands out (GPU
// fractions pack), the job supervisor of every submission (placed by its
// entrypoint resources; an infeasible one stays PENDING and shows as a demand
// in the cluster status), working_dir packages (deleted once unreferenced and
// unpinned), a head restart without GCS fault tolerance (a new cluster), and
// the programs jobs run (Program; TrainPy plays workspace/train.py).
//
// The model has no goroutines: it moves on its clock (Config.Now) whenever a
// host calls it, so a test with a fake clock is deterministic and a host with
// the wall clock is real-time. Every timing is in Config; Default gives Ray's.
// docs/ray-fidelity.md names the Ray source of each behaviour.
package raymodel

import "time"

// Config is Ray's timings and knobs. Default returns Ray 2.54's values.
type Config struct {
	// JobStartTimeout: a job whose supervisor actor has not started within
	// it is FAILED (RAY_JOB_START_TIMEOUT_SECONDS, default 900;
	// dashboard/consts.py DEFAULT_JOB_START_TIMEOUT_SECONDS, checked in
	// JobManager._monitor_job_internal).
	JobStartTimeout time.Duration
	// PackagePin: how long GET /api/packages/... keeps an unreferenced
	// package (RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S, default 600;
	// _private/ray_constants.py).
	PackagePin time.Duration
	// The GCS health checks of every raylet (src/ray/common/ray_config_def.h:
	// health_check_period_ms 3000, health_check_timeout_ms 10000,
	// health_check_failure_threshold 5).
	HealthCheckPeriod   time.Duration
	HealthCheckTimeout  time.Duration
	HealthCheckFailures int
	// GCSReconnectTimeout: a raylet that cannot reach its GCS this long exits
	// (gcs_rpc_server_reconnect_timeout_s, default 60; the GCS RPC client
	// calls std::_Exit(EXIT_FAILURE)).
	GCSReconnectTimeout time.Duration
	// SpreadThreshold: the hybrid scheduling policy packs onto a node until
	// its critical resource utilization reaches this (scheduler_spread_threshold,
	// default 0.5).
	SpreadThreshold float64
	// JobMonitorPeriod: JobManager.JOB_MONITOR_LOOP_PERIOD_S (1 s), the
	// delay before a killed supervisor's job is marked FAILED.
	JobMonitorPeriod time.Duration
	// DriverOnWorkerNodes: a job whose entrypoint asks for no resources may
	// run its driver on any node, placed by the hybrid policy, rather than
	// pinned to the head (RAY_JOB_ALLOW_DRIVER_ON_WORKER_NODES=1;
	// job_manager.py _get_scheduling_strategy returns "DEFAULT"). Off in Ray.
	DriverOnWorkerNodes bool
	// Now is the model's clock (time.Now when nil).
	Now func() time.Time
}

// Default is Ray 2.54's configuration with the wall clock.
func Default() Config {
	return Config{
		JobStartTimeout:     900 * time.Second,
		PackagePin:          600 * time.Second,
		HealthCheckPeriod:   3 * time.Second,
		HealthCheckTimeout:  10 * time.Second,
		HealthCheckFailures: 5,
		GCSReconnectTimeout: 60 * time.Second,
		SpreadThreshold:     0.5,
		JobMonitorPeriod:    time.Second,
		Now:                 time.Now,
	}
}

// withDefaults fills the zero fields of c from Default.
func (c Config) withDefaults() Config {
	d := Default()
	if c.JobStartTimeout == 0 {
		c.JobStartTimeout = d.JobStartTimeout
	}
	if c.PackagePin == 0 {
		c.PackagePin = d.PackagePin
	}
	if c.HealthCheckPeriod == 0 {
		c.HealthCheckPeriod = d.HealthCheckPeriod
	}
	if c.HealthCheckTimeout == 0 {
		c.HealthCheckTimeout = d.HealthCheckTimeout
	}
	if c.HealthCheckFailures == 0 {
		c.HealthCheckFailures = d.HealthCheckFailures
	}
	if c.GCSReconnectTimeout == 0 {
		c.GCSReconnectTimeout = d.GCSReconnectTimeout
	}
	if c.SpreadThreshold == 0 {
		c.SpreadThreshold = d.SpreadThreshold
	}
	if c.JobMonitorPeriod == 0 {
		c.JobMonitorPeriod = d.JobMonitorPeriod
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// DeadAfter is how long a silent raylet's node stays ALIVE: failures x
// period when every check fails at once (the address is gone, as for a
// stopped container), at most failures x (period + timeout) when every check
// waits out its timeout (gcs_health_check_manager.cc). lab/raynodes.go
// quotes the same range to students.
func (c Config) DeadAfter() (typical, longest time.Duration) {
	c = c.withDefaults()
	n := time.Duration(c.HealthCheckFailures)
	return n * c.HealthCheckPeriod, n * (c.HealthCheckPeriod + c.HealthCheckTimeout)
}
