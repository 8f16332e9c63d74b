package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/service"
)

// verifyNow runs verify --json once, at once, and returns the rows that
// failed.
func verifyNow(t *testing.T, s *standin, groups string) []string {
	t.Helper()
	out, errOut, code := runBin(t, binRun{args: append([]string{"verify", "--json", "--only", groups}, s.lab()...), env: s.env})
	var rep struct {
		OK     bool
		Checks []struct{ ID, Status, Evidence string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout: %s\nstderr: %s", out, errOut)
	var bad []string
	for _, c := range rep.Checks {
		if c.Status == "fail" {
			bad = append(bad, c.ID+" "+c.Status+": "+c.Evidence)
		}
	}
	assert.Equal(t, len(bad) == 0, rep.OK)
	assert.Equal(t, len(bad) > 0, code == 1, "exit %d", code)
	return bad
}

// up says ready only when what verify reads is true: a verify run right
// after up passes, with no wait (the engine's health included). After a
// worker is recreated, up waits for the new worker's own node, not for a
// count its old node makes up, and verify right after passes again.
func TestVerifyRightAfterUpPasses(t *testing.T) {
	s := newStandin(t)
	const groups = "containers,ray,minio,metrics,jupyter"
	_, errOut, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "ready health", "up waited for the engine's health")
	assert.Empty(t, verifyNow(t, s, groups), "verify right after up")

	worker := s.container(t, service.WorkerService(1))
	require.NoError(t, s.eng.ContainerRemove(context.Background(), worker, true))
	_, errOut, code = runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, errOut)
	t.Logf("up after ray-worker-1 was removed:\n%s", errOut)
	for _, m := range workerCount.FindAllStringSubmatch(errOut, -1) {
		have, _ := strconv.Atoi(m[1])
		want, _ := strconv.Atoi(m[2])
		assert.LessOrEqual(t, have, want, "no worker counted twice: %s", m[0])
	}
	assert.Empty(t, verifyNow(t, s, groups), "verify right after the up that recreated a worker")
}

// workerCount is how up's Ray check says how many workers it counted.
var workerCount = regexp.MustCompile(`(\d+) of (\d+) workers`)
