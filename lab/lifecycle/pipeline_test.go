package lifecycle_test

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/fake"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
	"github.com/mltrain/mltrain/internal/store/storetest"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/lifecycle"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/status"
)

// joinNodeIP is the joining "host": a loopback address of its own, so the
// head (at 127.0.0.1) and this host's nodes are told apart.
const joinNodeIP = "127.0.0.2"

// fakeJoin is a second host joining, on the fake engine, a lab whose head
// is doubled: Ray's dashboard (listing this host's node ALIVE with its GPU
// once asked), a GCS port that accepts connections, and MinIO.
type fakeJoin struct {
	eng  *fake.Engine
	head *raytest.Modelled
	opts lifecycle.JoinRunOptions
}

func newFakeJoin(t *testing.T) *fakeJoin {
	j := &fakeJoin{eng: fake.New(), head: raytest.NewModel(t, raymodel.Config{}, "join-token")}
	j.eng.HealthDelay = 30 * time.Millisecond
	gcs, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { gcs.Close() })
	dash, err := url.Parse(j.head.URL)
	require.NoError(t, err)
	dashPort, err := strconv.Atoi(dash.Port())
	require.NoError(t, err)
	worker := "mltrain-test/standin-worker:1"
	j.eng.Images[worker] = docker.Image{ID: "sha256:worker", Tags: []string{worker},
		Labels: map[string]string{labels.ImageRayVersion: "2.54.0", labels.ImagePythonVersion: "3.12"}}
	b := plan.JoinBundle{Lab: "fakehead", HeadIP: "127.0.0.1", GCSPort: gcs.Addr().(*net.TCPAddr).Port, Dashboard: dashPort,
		RayToken: j.head.Token, MinIO: storetest.New(t).URL, Bucket: "ray", S3Access: "lab", S3Secret: "labsecret",
		RayVersion: "2.54.0", Python: "3.12", PortBase: labtest.FreeRayPortBase(t, 2)}
	j.head.JoinNodes([]ray.Node{
		{NodeID: "head", NodeIP: b.HeadIP, IsHeadNode: true, State: "ALIVE"},
		{NodeID: "joined", NodeIP: joinNodeIP, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 1, "GPU": 1}},
	}...)
	j.opts = lifecycle.JoinRunOptions{StateDir: state.Dir(t.TempDir()), Bundle: b, Images: images.Options{Pull: images.PullNever},
		Timeout: 20 * time.Second, StopTimeout: time.Second,
		Join: plan.JoinOptions{Project: "fakejoin", AllowCPU: true, Workers: 1, WorkerImage: worker, DataVolume: "fakejoin-food11"}}
	return j
}

func (j *fakeJoin) join(t *testing.T, rep progress.Reporter) (lifecycle.Result, error) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return lifecycle.Join(ctx, lifecycle.UpDeps{Engine: j.eng, Reporter: rep, Detect: func(context.Context) (host.Facts, error) {
		f := labtest.RehearsalFacts()
		f.NodeIP = joinNodeIP
		return f, nil
	}}, j.opts)
}

// steps are the named steps that ended well, in order, among names.
func steps(rec *progress.Recorder, names []string) []string {
	var out []string
	for _, e := range rec.Events() {
		if e.Kind == progress.Done && slices.Contains(names, e.Step) {
			out = append(out, e.Step)
		}
	}
	return out
}

// up and join run one pipeline: the steps they share run in the same order
// and are reported the same way (started, then done), each command adding
// only its own; both return one result shape and record the plan ready.
func TestUpAndJoinRunOnePipelineOnTheFakeEngine(t *testing.T) {
	shared := []string{"detect host", "plan", "render", "check ports", "images", "data volume", "apply", "ready", "save state"}
	upOnly := []string{"credentials", "workspace", "bucket", "minio lab user"}
	joinOnly := []string{"reach the head", "worker image versions"}
	all := slices.Concat(shared, upOnly, joinOnly)

	f := newFakeLab(t)
	var upRec progress.Recorder
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	up, err := lifecycle.Up(ctx, f.deps(&upRec), f.opts)
	require.NoError(t, err)
	assert.Len(t, up.Apply.Created, 7)

	j := newFakeJoin(t)
	var joinRec progress.Recorder
	joined, err := j.join(t, &joinRec)
	require.NoError(t, err)
	assert.Equal(t, []string{"ray-worker-0"}, joined.Apply.Created, "the same result shape as up's")
	require.Len(t, joined.Nodes, 1)
	assert.Equal(t, joinNodeIP, joined.Nodes[0].NodeIP)

	for name, rec := range map[string]*progress.Recorder{"up": &upRec, "join": &joinRec} {
		assert.Equal(t, shared, steps(rec, shared), "%s runs the shared steps in order", name)
		for _, s := range steps(rec, all) {
			assert.True(t, rec.Has(s, progress.Start), "%s: step %s is reported started, then done", name, s)
		}
	}
	assert.ElementsMatch(t, upOnly, steps(&upRec, slices.Concat(upOnly, joinOnly)))
	assert.ElementsMatch(t, joinOnly, steps(&joinRec, slices.Concat(upOnly, joinOnly)))

	for name, dir := range map[string]state.Dir{"up": f.state, "join": j.opts.StateDir} {
		st, err := dir.State()
		require.NoError(t, err, name)
		assert.False(t, st.UpAt.IsZero(), "%s marked its plan ready", name)
	}
}

// A first run whose container fails to start is rolled back by the one
// rollback, up's and join's alike, and leaves its plan recorded in
// state.json (not ready), which status reads as the services missing.
func TestUpAndJoinRollBackAFailedFirstRunAndKeepThePlan(t *testing.T) {
	f := newFakeLab(t)
	f.eng.StartFunc = failStartOf("fakelab-jupyter")
	_, err := f.up()
	require.ErrorIs(t, err, errStart)
	assert.Empty(t, f.containers(), "up rolled back")

	j := newFakeJoin(t)
	j.eng.StartFunc = failStartOf("fakejoin-ray-worker-0")
	_, err = j.join(t, nil)
	require.ErrorIs(t, err, errStart)
	left, err := j.eng.ContainerList(t.Context(), map[string]string{labels.Project: "fakejoin"})
	require.NoError(t, err)
	assert.Empty(t, left, "join rolled back")

	for name, c := range map[string]struct {
		eng     docker.Engine
		dir     state.Dir
		project string
		missing []string
	}{
		"up":   {f.eng, f.state, "fakelab", []string{"grafana", "jupyter", "minio", "prometheus", "ray-head", "ray-worker-0", "ray-worker-1"}},
		"join": {j.eng, j.opts.StateDir, "fakejoin", []string{"ray-worker-0"}},
	} {
		st, err := c.dir.State()
		require.NoError(t, err, name)
		assert.True(t, st.UpAt.IsZero(), "%s: the plan is recorded, not marked ready", name)
		st2, err := status.Get(t.Context(), c.eng, nextstep.CommandsFor(c.project, c.dir))
		require.NoError(t, err, name)
		assert.Equal(t, state.StateFile, st2.PlanSource, name)
		assert.Equal(t, c.missing, st2.Missing, name)
		assert.ErrorIs(t, st2.MissingError(), status.ErrMissingServices, name)
	}
}
