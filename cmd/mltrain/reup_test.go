package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/ports/portstest"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// The lab's choices are remembered: a bare 'mltrain up' (what every Next
// line prints) keeps the images, ports, volume and addresses the first up
// was given, changing nothing; a flag changes only what it names, and an
// up refused before it touches a container (a busy port) leaves
// compose.yaml and state.json byte for byte as they were.
func TestABareReUpKeepsTheLabsChoices(t *testing.T) {
	s := newStandin(t)
	dir := state.Dir(s.stateDir)
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)
	composeYAML, err := os.ReadFile(dir.File(compose.ComposeFile))
	require.NoError(t, err)

	stdout, stderr, code := runBin(t, binRun{args: append([]string{"up"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "bare up: %s", stderr)
	assert.Contains(t, stdout, "nothing changed")
	assert.NotContains(t, stderr, "changed:", "nothing to say changed")
	assert.NotContains(t, stdout, "The lab's credentials", "only the up that first completes the lab shows them")
	again, err := os.ReadFile(dir.File(compose.ComposeFile))
	require.NoError(t, err)
	assert.Equal(t, string(composeYAML), string(again), "compose.yaml byte for byte")
	stateJSON, err := os.ReadFile(dir.File(state.StateFile))
	require.NoError(t, err)

	busy := portstest.FreePorts(t, 1)[0]
	release := holdPort(t, busy)
	defer release()
	_, stderr, code = runBin(t, binRun{args: append(append([]string{"up"}, s.lab()...), "--port", service.PortDashboard+"="+strconv.Itoa(busy)), env: s.env})
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "changed: port dashboard: "+strconv.Itoa(s.opts.Ports[service.PortDashboard])+" → "+strconv.Itoa(busy))
	assert.Contains(t, stderr, "is in use")
	after, err := os.ReadFile(dir.File(compose.ComposeFile))
	require.NoError(t, err)
	assert.Equal(t, string(composeYAML), string(after), "a refused up leaves compose.yaml as it was")
	afterState, err := os.ReadFile(dir.File(state.StateFile))
	require.NoError(t, err)
	assert.Equal(t, string(stateJSON), string(afterState), "a refused up leaves state.json as it was")
}
