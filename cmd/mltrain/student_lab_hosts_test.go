package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// The student's lab over two hosts, through the built mltrain: the first
// host's lab accepts joins (Ray on the host network at this machine's
// address, one local worker), a second "host" (a network namespace of its
// own, labtest.NewSecondHost) joins one worker, and every exercise runs on
// the cluster they make: multi's two training workers land one per host,
// fault stops the first host's worker and Train resumes on the second's.
// courseCPUs give the nodes the logical CPUs the course's jobs ask for (8
// per job or Train worker, 4 per fractional job or trial): Ray's counts are
// logical, so a small CI host can advertise them. The one-host student
// test runs at the host's own sizing; this one at the course's.
var courseCPUs = []string{"--head-cpus", "4", "--worker-cpus", "32"}

func TestStudentLabOverTwoHosts(t *testing.T) {
	eng := dockertest.Engine(t)
	nodeIP := labtest.NodeIP(t)
	o := labtest.JoinableOptions(t, eng, "mlts", nodeIP, 1)
	s := &standin{eng: eng, project: o.Project, opts: o, stateDir: filepath.Join(t.TempDir(), "state"),
		env: []string{gpu.RootEnv + "=" + t.TempDir(), "HOME=" + t.TempDir()}}
	host2 := labtest.NewSecondHost(t, eng, "mlts-host2")
	require.NoError(t, os.MkdirAll(s.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(s.stateDir).File(compose.OverrideFile), []byte(studentLabOverride), 0o600))

	up := s.upArgs(append(courseCPUs, "--allow-join", "--workers", "1", "--bind", nodeIP, "--node-ip", nodeIP,
		"--host-ip", nodeIP, "--ray-port-base", fmt.Sprint(o.RayPortBase))...)
	_, stderr, code := runBin(t, binRun{args: up, env: s.env})
	require.Equal(t, 0, code, "up --allow-join: %s", stderr)
	data := append([]string{"data", "food11", "--zip", canonicalZip(t), "--volume", s.opts.DataVolume}, s.lab()...)
	_, stderr, code = runBin(t, binRun{args: data, env: s.env})
	require.Equal(t, 0, code, "data food11: %s", stderr)

	// The second host joins with the bundle join-token printed, from a file
	// only its owner reads (out of ps).
	line, stderr, code := runBin(t, binRun{args: append([]string{"join-token"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "join-token: %s", stderr)
	fields := strings.Fields(line)
	require.Len(t, fields, 6, line)
	require.Equal(t, []string{"echo", "|", "mltrain", "join", "-"}, append([]string{fields[0]}, fields[2:]...), line)
	bundleFile := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.WriteFile(bundleFile, []byte(strings.Trim(fields[1], "'")), 0o600))
	j := joinedHost(t, host2.Name)
	join := append([]string{"join", "--bundle-file", bundleFile}, j.lab()...)
	join = append(join, "--allow-cpu", "--workers", "1", "--worker-cpus", "32", "--node-ip", host2.IP,
		"--image-worker", o.Images[service.RoleWorker], "--data-volume", j.project+"-food11", "--pull", "never", "--timeout", "2m")
	_, stderr, code = runBin(t, binRun{args: join, env: s.env})
	require.Equal(t, 0, code, "join: %s", stderr)
	// Prometheus on the first host scrapes the joined node at its address.
	host2.RouteFrom(t, o.Project+"-"+service.PrometheusService)

	stdout, stderr, code := runLong(t, s, 12*time.Minute, studentLabArgs(s)...)
	require.Equal(t, 0, code, "lab all:\n%s\n%s", stdout, stderr)
	multi, err := exercise.LoadRecord(state.Dir(s.stateDir), "multi")
	require.NoError(t, err)
	assert.True(t, multi.OK, multi.Problems)
	job, ok := multi.LastJob()
	require.True(t, ok)
	assert.ElementsMatch(t, []string{nodeIP, host2.IP}, job.NodeIPs, "multi's two training workers ran one on each host")

	rep, code := verifyAll(t, s, 90*time.Second)
	requireAllPass(t, rep, code)
}

// joinedHost is the second host's mltrain: its own project and state dir,
// its worker in the host's namespace (compose.override.yaml).
func joinedHost(t *testing.T, holder string) *standin {
	t.Helper()
	j := &standin{project: strings.ReplaceAll(dockertest.UniqueName(t, "mlts2"), "_", "-"), stateDir: filepath.Join(t.TempDir(), "state2")}
	require.NoError(t, os.MkdirAll(j.stateDir, 0o700))
	require.NoError(t, os.WriteFile(state.Dir(j.stateDir).File(compose.OverrideFile),
		[]byte("services:\n  ray-worker-0:\n    network_mode: container:"+holder+"\n"), 0o600))
	eng := dockertest.Engine(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = compose.Down(ctx, eng, j.project, time.Second, true, nil)
		_ = eng.VolumeRemove(ctx, j.project+"-food11")
	})
	return j
}
