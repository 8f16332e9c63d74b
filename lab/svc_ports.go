package lab

import "sort"

// Port names, for Options.Ports and Plan.Ports.
const (
	PortDashboard    = "dashboard"     // Ray dashboard + Jobs API, 8265, on --bind
	PortGrafana      = "grafana"       // 3000, on --bind
	PortJupyter      = "jupyter"       // 8888, on --bind
	PortMinIOConsole = "minio-console" // 9001, on --bind
	PortMinIOAPI     = "minio-api"     // 9000, 127.0.0.1 only (mltrain makes the bucket through it)
	PortPrometheus   = "prometheus"    // 9090, 127.0.0.1 only
	PortGCS          = "gcs"           // 6379, Ray's GCS: on the host network only with --allow-join
)

// DefaultPorts are the host ports the course's text uses.
var DefaultPorts = map[string]int{
	PortDashboard:    8265,
	PortGrafana:      3000,
	PortJupyter:      8888,
	PortMinIOConsole: 9001,
	PortMinIOAPI:     9000,
	PortPrometheus:   9090,
	PortGCS:          6379,
}

// loopbackPorts are never published on --bind: they carry no browser UI and
// (MinIO API, Prometheus) accept unauthenticated or credential-guessing
// traffic, so only this host reaches them.
var loopbackPorts = map[string]bool{PortMinIOAPI: true, PortPrometheus: true}

func portNames() []string {
	names := make([]string, 0, len(DefaultPorts))
	for n := range DefaultPorts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
