package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
)

func joinerFacts(gpus []gpu.GPU) host.Facts {
	return host.Facts{GPUs: gpu.Report{GPUs: gpus}, CPUs: 32, MemoryBytes: 128 << 30, NodeIP: "10.52.0.8", RenderGID: 110, VideoGID: 44}
}

func TestJoinPlanGivesThisHostsGPUsToWorkersOnly(t *testing.T) {
	b := goldenBundle()
	p, err := NewJoin(joinerFacts(nv(2)), JoinOptions{Project: "second"}, b)
	require.NoError(t, err)
	assert.Equal(t, "second", p.Project)
	require.Len(t, p.Workers, 2, "one worker per GPU, as up does")
	assert.Empty(t, p.Head.Container, "the head is the first host's")
	assert.Equal(t, NetworkHost, p.Network)
	assert.Equal(t, "10.52.0.8", p.NodeIP)
	require.NotNil(t, p.Joined)
	assert.Equal(t, "10.52.0.7", p.Joined.HeadIP)
	assert.Equal(t, b.RayToken, p.Credentials.RayAuthToken)
	assert.Equal(t, b.S3Access, p.Credentials.MinIOLabAccessKey, "the bucket-limited user, never MinIO's root")
	assert.Empty(t, p.Credentials.MinIOAccessKey)
	assert.Equal(t, NodePorts(b.PortBase, 1), *p.Workers[0].Ports)

	p, err = NewJoin(joinerFacts(nv(1)), JoinOptions{ShareGPU: true}, b)
	require.NoError(t, err)
	assert.Len(t, p.Workers, 2, "--share-gpu runs two workers on the one GPU")
	assert.Equal(t, "mltrain", p.Project, "the lab's name by default")
}

func TestJoinPlanRefusals(t *testing.T) {
	b := goldenBundle()
	_, err := NewJoin(joinerFacts(nil), JoinOptions{}, b)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no usable GPU")
	assert.Contains(t, clierr.Hint(err), "--allow-cpu")
	p, err := NewJoin(joinerFacts(nil), JoinOptions{AllowCPU: true}, b)
	require.NoError(t, err, "a CPU rehearsal worker when asked")
	assert.Equal(t, ModeCPU, p.Mode)

	f := joinerFacts(nv(1))
	f.NodeIP = b.HeadIP
	_, err = NewJoin(f, JoinOptions{}, b)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "first host")

	f.NodeIP = ""
	_, err = NewJoin(f, JoinOptions{}, b)
	require.Error(t, err)
	assert.Contains(t, clierr.Hint(err), "--node-ip")

	other := b
	other.ImageHash = "ffffffffffff"
	_, err = NewJoin(joinerFacts(nv(1)), JoinOptions{}, other)
	require.Error(t, err, "another mltrain's worker image")
	assert.Contains(t, err.Error(), "ffffffffffff")
	assert.Contains(t, clierr.Hint(err), "mltrain images load")
	_, err = NewJoin(joinerFacts(nv(1)), JoinOptions{WorkerImage: "site/ray:2.54.0-cu128"}, other)
	assert.NoError(t, err, "a loaded image replaces the build")
}

func goldenBundle() JoinBundle {
	hash, _ := dockerfiles.Hash(dockerfiles.RayCUDA, DefaultRayVersion)
	return JoinBundle{Lab: "mltrain", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: creds.RayAuthToken,
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: creds.MinIOLabAccessKey, S3Secret: creds.MinIOLabSecretKey,
		RayVersion: DefaultRayVersion, Python: dockerfiles.PythonVersion, ImageHash: hash, ImageKind: string(dockerfiles.RayCUDA),
		PortBase: DefaultRayPortBase}
}
