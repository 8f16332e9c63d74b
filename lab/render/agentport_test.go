package render

import (
	"testing"

	"github.com/mltrain/mltrain/lab/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The port the worker's healthcheck asks is the one its agent is started
// on, both from the plan's Worker (nodes on one host network will need
// distinct ones).
func TestWorkerAgentPortComesFromThePlan(t *testing.T) {
	c := caseNamed("nvidia-2gpu")
	p, err := c.plan()
	require.NoError(t, err)
	for _, w := range p.Workers {
		assert.Equal(t, service.DefaultAgentPort, w.AgentPort, w.Service)
	}
	p.Workers[1].AgentPort = 52400
	proj, err := Project(p)
	require.NoError(t, err)
	for svc, port := range map[string]string{"ray-worker-0": "52365", "ray-worker-1": "52400"} {
		s, err := proj.GetService(svc)
		require.NoError(t, err)
		assert.Contains(t, []string(s.Command), "--dashboard-agent-listen-port="+port, svc)
		assert.Equal(t, port, *s.Environment[service.AgentPortEnv], svc)
		require.NotNil(t, s.HealthCheck)
		assert.Equal(t, service.DefaultHealthcheck(service.RoleWorker), []string(s.HealthCheck.Test), svc)
	}
	// The check reads the port from the environment and asks this node's
	// agent, never the head.
	script := service.DefaultHealthcheck(service.RoleWorker)[3]
	assert.Contains(t, script, `os.environ["`+service.AgentPortEnv+`"]`)
	assert.Contains(t, script, "/api/local_raylet_healthz")
	assert.NotContains(t, script, service.HeadService)
	assert.NotContains(t, script, "$", "Compose would interpolate it")
}
