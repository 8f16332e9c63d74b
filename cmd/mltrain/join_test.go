package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

func TestJoinRefusesBadInputBeforeTheEngine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"join"}, "join read no bundle from stdin (it was empty)"},
		{[]string{"join", "-"}, "join read no bundle from stdin (it was empty)"},
		{[]string{"join", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"join", "hello"}, "not a join bundle"},
		{[]string{"join", "mltrain-join-v1.%%%"}, "damaged"},
	} {
		_, stderr, code := runOffline(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Contains(t, stderr, "Next:", tc.args)
	}
}

// join-token on a lab that was brought up closed says how to open it.
func TestJoinTokenNeedsAllowJoin(t *testing.T) {
	dir := state.Dir(t.TempDir())
	require.NoError(t, dir.SaveState(state.State{Project: "closed", Plan: plan.Plan{Project: "closed", Network: plan.NetworkBridge}}))
	_, stderr, code := runOffline(t, "join-token", "--state-dir", dir.Path(), "--project", "closed")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "brought up without --allow-join")
	assert.Contains(t, stderr, "mltrain --project closed --state-dir "+dir.Path()+" up --allow-join")
}

// --render-only writes the second host's compose.yaml from the planning
// flags, starting nothing (the engine is never asked).
func TestJoinRenderOnly(t *testing.T) {
	out := t.TempDir()
	b := plan.JoinBundle{Lab: "mltrain", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: strings.Repeat("ab", 32),
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: "LABUSER000", S3Secret: "labsecret0", RayVersion: plan.DefaultRayVersion,
		Python: "3.12", ImageHash: "000000000000", ImageKind: "ray-rocm", PortBase: plan.DefaultRayPortBase}
	stdout, stderr, code := runOffline(t, "join", b.Encode(), "--render-only", "--out", out, "--gpus-from", gpusFile(t, twoNvidia),
		"--cpus", "16", "--memory", "64g", "--node-ip", "10.52.0.8")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "nothing started")
	y, err := os.ReadFile(filepath.Join(out, "compose.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(y), "--address=10.52.0.7:6379")
	assert.Contains(t, string(y), "--node-ip-address=10.52.0.8")
	assert.Contains(t, string(y), "network_mode: host")
	assert.NotContains(t, string(y), "ray-head:", "the head is the first host's")
	st, err := os.Stat(filepath.Join(out, "compose.yaml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "it holds the lab's token")
}
