package raymodel

import (
	"strconv"
	"time"
)

// Ray's own environment variables for the timings the model keeps: the
// stand-in honours them as a Ray node does (RAY_<name> overrides a
// ray_config_def.h entry; the job and runtime-env ones are read in Python).
const (
	EnvJobStartTimeout     = "RAY_JOB_START_TIMEOUT_SECONDS"
	EnvPackagePin          = "RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S"
	EnvHealthCheckPeriod   = "RAY_health_check_period_ms"
	EnvHealthCheckTimeout  = "RAY_health_check_timeout_ms"
	EnvHealthCheckFailures = "RAY_health_check_failure_threshold"
	EnvGCSReconnect        = "RAY_gcs_rpc_server_reconnect_timeout_s"
	EnvDriverOnWorkers     = "RAY_JOB_ALLOW_DRIVER_ON_WORKER_NODES"
	// EnvDeadAfter is the stand-in's older knob: how long a silent node
	// stays ALIVE, spread over the failure threshold's checks.
	EnvDeadAfter = "STANDIN_RAY_DEAD_AFTER"
)

// ConfigFromEnv is Default with what getenv sets overriding it.
func ConfigFromEnv(getenv func(string) string) Config {
	c := Default()
	secs := func(name string, into *time.Duration, unit time.Duration) {
		if v, err := strconv.ParseFloat(getenv(name), 64); err == nil && v > 0 {
			*into = time.Duration(v * float64(unit))
		}
	}
	secs(EnvJobStartTimeout, &c.JobStartTimeout, time.Second)
	secs(EnvPackagePin, &c.PackagePin, time.Second)
	secs(EnvHealthCheckPeriod, &c.HealthCheckPeriod, time.Millisecond)
	secs(EnvHealthCheckTimeout, &c.HealthCheckTimeout, time.Millisecond)
	secs(EnvGCSReconnect, &c.GCSReconnectTimeout, time.Second)
	if n, err := strconv.Atoi(getenv(EnvHealthCheckFailures)); err == nil && n > 0 {
		c.HealthCheckFailures = n
	}
	c.DriverOnWorkerNodes = getenv(EnvDriverOnWorkers) == "1"
	if d, err := time.ParseDuration(getenv(EnvDeadAfter)); err == nil && d > 0 {
		c.HealthCheckPeriod = d / time.Duration(c.HealthCheckFailures)
	}
	return c
}
