package service

// The worker's healthcheck and the environment it reads.

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
