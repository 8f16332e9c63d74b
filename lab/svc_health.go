package lab

// The healthchecks rendered into each service, and the environment the
// worker's check reads.

// DefaultHealthcheck is each role's Docker healthcheck test. All are exec
// form (no shell), using only tools the pinned images ship: the ray CLI and
// Python, MinIO's bundled mc, busybox wget in Prometheus and Grafana, wget
// in the Jupyter image. Tests replace them through Options.Healthchecks.
func DefaultHealthcheck(r Role) []string {
	switch r {
	case RoleHead:
		// GCS reachable and healthy; the token comes from RAY_AUTH_TOKEN.
		return []string{"CMD", "ray", "health-check"}
	case RoleWorker:
		// This node's own raylet: `ray health-check --address ray-head:6379`
		// asked the head's GCS and passed for a worker whose raylet had died.
		return []string{"CMD", "python", "-c", workerHealthcheck}
	case RoleMinIO:
		return []string{"CMD", "mc", "ready", "local"}
	case RolePrometheus:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:9090/-/ready"}
	case RoleGrafana:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:3000/api/health"}
	case RoleJupyter:
		return []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8888/api"}
	}
	return nil
}

// AgentPortEnv tells a worker's healthcheck its node's agent port (the
// plan's Worker.AgentPort); exec-form checks have no shell to expand it.
const AgentPortEnv = "MLTRAIN_RAY_AGENT_PORT"

// NodeIPEnv tells a host-networked worker's healthcheck the address its
// agent binds (--node-ip-address); on a bridge the container's own name
// resolves to it.
const NodeIPEnv = "MLTRAIN_RAY_NODE_IP"

// workerHealthcheck asks this node's Ray dashboard agent whether its raylet
// is alive (GET /api/local_raylet_healthz: the agent process exits with its
// raylet, and answers 503 when the GCS no longer lists the node ALIVE; Ray
// exempts the path from token auth, the token is sent anyway for Rays that
// do not). The agent listens on the node's address and, in recent Rays, on
// 127.0.0.1 too: both are tried (on the host network the node's address
// comes from NodeIPEnv: the host's name may resolve to another address). Python is in every Ray image; wget and
// curl need not be.
const workerHealthcheck = `import os, socket, sys, urllib.request as u
port = os.environ["` + AgentPortEnv + `"]
hdr = {"Authorization": "Bearer " + os.environ.get("RAY_AUTH_TOKEN", "")}
err = None
for host in ("127.0.0.1", os.environ.get("` + NodeIPEnv + `") or socket.gethostbyname(socket.gethostname())):
    try:
        u.urlopen(u.Request("http://%s:%s/api/local_raylet_healthz" % (host, port), headers=hdr), timeout=4)
        sys.exit(0)
    except Exception as e:
        err = e
sys.exit("this node's raylet is not healthy (Ray dashboard agent, port %s): %s" % (port, err))
`
