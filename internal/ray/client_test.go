package ray_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/ray/raymodel"
	"github.com/mltrain/mltrain/internal/ray/raytest"
)

func client(t *testing.T, srv *raytest.Modelled, token string) *ray.Client {
	t.Helper()
	c, err := ray.New(ray.Options{Address: srv.URL, Token: token, TokenSource: "RAY_AUTH_TOKEN"})
	require.NoError(t, err)
	return c
}

func TestParseAddress(t *testing.T) {
	for in, want := range map[string]string{
		"http://ray-head:8265/": "http://ray-head:8265",
		"10.0.0.5":              "http://10.0.0.5:8265",
		"10.0.0.5:9999":         "http://10.0.0.5:9999",
		"https://ray.example":   "https://ray.example",
	} {
		u, err := ray.ParseAddress(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, u.String(), in)
	}
	_, err := ray.ParseAddress("")
	require.ErrorIs(t, err, ray.ErrNoAddress)
	for _, bad := range []string{"ray://head:10001", "auto", "ftp://x"} {
		_, err := ray.ParseAddress(bad)
		require.Error(t, err, bad)
		assert.NotEmpty(t, clierr.Hint(err), bad)
	}
}

func TestVersionIgnoresUnknownFields(t *testing.T) {
	srv := raytest.NewLab(t, "")
	srv.LaterRay()
	v, err := client(t, srv, "").Version(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "2.54.0", v.RayVersion)
	assert.Equal(t, "4", v.Version)
}

func TestAuthMissingVersusWrong(t *testing.T) {
	srv := raytest.NewLab(t, "s3cret")
	ctx := context.Background()

	_, err := client(t, srv, "").Version(ctx)
	require.ErrorIs(t, err, ray.ErrAuthMissing)
	assert.NotErrorIs(t, err, ray.ErrAuthInvalid)
	assert.Contains(t, err.Error(), "requires a token and none was sent")
	assert.Contains(t, err.Error(), "RAY_AUTH_TOKEN")

	_, err = client(t, srv, "wrong").Jobs(ctx)
	require.ErrorIs(t, err, ray.ErrAuthInvalid)
	assert.NotErrorIs(t, err, ray.ErrAuthMissing)
	assert.Contains(t, err.Error(), "rejected the token from RAY_AUTH_TOKEN")

	_, err = client(t, srv, "s3cret").Version(ctx)
	require.NoError(t, err)
}

func TestUnreachableSaysWhere(t *testing.T) {
	srv := raytest.NewLab(t, "")
	addr := srv.URL
	srv.Close()
	c, err := ray.New(ray.Options{Address: addr})
	require.NoError(t, err)
	_, err = c.Version(context.Background())
	require.ErrorIs(t, err, ray.ErrUnreachable)
	assert.Contains(t, err.Error(), addr)
}

// TestJobLifecycle follows a job PENDING -> RUNNING -> final: submitted
// before a node with its GPU joined, it waits; placed, its driver prints
// "epoch 1" and exits (code 1: FAILED) once the clock moved on.
func TestJobLifecycle(t *testing.T) {
	for _, final := range []ray.JobStatus{ray.Succeeded, ray.Failed} {
		t.Run(string(final), func(t *testing.T) {
			clk := raytest.NewClock(time.Unix(1_800_000_000, 0))
			nodes := raytest.LabNodes()
			srv := raytest.NewModel(t, raymodel.Config{Now: clk.Now}, "", nodes[0])
			code := map[ray.JobStatus]int{ray.Failed: 1}[final]
			srv.Run = raytest.Script{End: "epoch 1\n", Run: time.Second, Code: code}.Program
			c := client(t, srv, "")
			ctx := context.Background()
			id, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py", EntrypointNumGPUs: 1, EntrypointNumCPUs: 8})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(id, "raysubmit_"))

			var seen []ray.JobStatus
			var gpuNode string
			j, err := c.Wait(ctx, id, ray.WaitOptions{Poll: time.Millisecond, OnChange: func(j ray.Job) {
				seen = append(seen, j.Status)
				switch j.Status {
				case ray.Pending:
					gpuNode = srv.Join(nodes[1])
				case ray.Running:
					clk.Add(time.Second)
				}
			}})
			require.NoError(t, err)
			assert.Equal(t, []ray.JobStatus{ray.Pending, ray.Running, final}, seen)
			assert.Equal(t, final, j.Status)
			assert.True(t, j.Status.Terminal())
			assert.False(t, j.End().IsZero())
			assert.Equal(t, gpuNode, j.DriverNodeID, "a GPU entrypoint's driver runs on the GPU node")

			logs, err := c.Logs(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, "epoch 1\n", logs)

			jobs, err := c.Jobs(ctx)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			assert.Equal(t, id, jobs[0].ID())

			ok, err := c.Delete(ctx, id)
			require.NoError(t, err)
			assert.True(t, ok)
			_, err = c.Job(ctx, id)
			assert.True(t, ray.IsNotFound(err), "%v", err)
		})
	}
}

func TestStopAndDeleteRules(t *testing.T) {
	srv := raytest.NewLab(t, "")
	c := client(t, srv, "")
	ctx := context.Background()
	id, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "sleep 1000", SubmissionID: "mine-1"})
	require.NoError(t, err)
	assert.Equal(t, "mine-1", id)

	_, err = c.Delete(ctx, id)
	require.Error(t, err, "a live job cannot be deleted")
	assert.Contains(t, err.Error(), "HTTP 500")

	stopped, err := c.Stop(ctx, id)
	require.NoError(t, err)
	assert.True(t, stopped)
	j, err := c.Wait(ctx, id, ray.WaitOptions{Poll: time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, ray.Stopped, j.Status)
	stopped, err = c.Stop(ctx, id)
	require.NoError(t, err)
	assert.False(t, stopped, "a stopped job is not running")

	// Waiting for RUNNING on a job that ended is an error, not a hang.
	_, err = c.Wait(ctx, id, ray.WaitOptions{Poll: time.Millisecond, Until: func(j ray.Job) bool { return j.Status == ray.Running }})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ended STOPPED")
}

func TestDuplicateSubmissionIsRecognised(t *testing.T) {
	srv := raytest.NewLab(t, "")
	c := client(t, srv, "")
	ctx := context.Background()
	_, err := c.Submit(ctx, ray.SubmitRequest{Entrypoint: "true", SubmissionID: "dup"})
	require.NoError(t, err)
	_, err = c.Submit(ctx, ray.SubmitRequest{Entrypoint: "true", SubmissionID: "dup"})
	require.ErrorIs(t, err, ray.ErrDuplicateSubmission)
	var apiErr *ray.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 500, apiErr.StatusCode)
}

func TestSubmitSendsOnlyKnownFields(t *testing.T) {
	b, err := json.Marshal(ray.SubmitRequest{Entrypoint: "x", SubmissionID: "s", RuntimeEnv: map[string]any{"a": 1},
		Metadata: map[string]string{"a": "b"}, EntrypointNumCPUs: 1, EntrypointNumGPUs: 0.5, EntrypointMemory: 1,
		EntrypointResources: map[string]float64{"r": 1}})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"entrypoint", "entrypoint_memory", "entrypoint_num_cpus", "entrypoint_num_gpus",
		"entrypoint_resources", "metadata", "runtime_env", "submission_id"}, keys)
	b, _ = json.Marshal(ray.SubmitRequest{Entrypoint: "x"})
	assert.JSONEq(t, `{"entrypoint":"x"}`, string(b), "zero values are omitted, not sent as null/0")
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func zipNames(t *testing.T, b []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

func TestPackageHashMatchesRay(t *testing.T) {
	// Golden value computed with Ray's algorithm (_hash_directory: XOR of the
	// first 8 bytes of SHA1(relpath [+ content]) over ".", every file and
	// directory, from b"00000000") in Python for this exact tree.
	dir := writeTree(t, map[string]string{"train.py": "print(1)\n", "sub/x.txt": "x", "empty/": ""})
	p, err := ray.PackageDir(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, "gcs://_ray_pkg_4765f0cce252e673.zip", p.URI)
	assert.Equal(t, []string{"empty/", "sub/x.txt", "train.py"}, zipNames(t, p.Zip))
	assert.Equal(t, 2, p.Files)

	// Excluded paths change neither the name nor the zip.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "__pycache__"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "__pycache__", "train.cpython-312.pyc"), []byte("junk"), 0o644))
	p2, err := ray.PackageDir(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, p.URI, p2.URI)

	// A content change changes the name.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte("print(2)\n"), 0o644))
	p3, err := ray.PackageDir(dir, nil)
	require.NoError(t, err)
	assert.NotEqual(t, p.URI, p3.URI)
}

func TestPackageExcludes(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"train.py":                "x",
		".git/HEAD":               "ref",
		".venv/bin/python":        "x",
		"venv/lib/a.py":           "x",
		"deep/__pycache__/a.pyc":  "x",
		".gitignore":              "*.ckpt\ndata/\n!keep.ckpt\n# comment\n\n",
		"model.ckpt":              "big",
		"keep.ckpt":               "small",
		"data/Food-11/0_0.jpg":    "img",
		"notes/.gitignore":        "draft.md\n",
		"notes/draft.md":          "x",
		"notes/final.md":          "x",
		"other/draft.md":          "nested .gitignore applies to its own subtree only",
		".rayignore":              "scratch\n",
		"scratch/tmp.txt":         "x",
		"logs/run.log":            "x",
		"requirements.txt":        "torch\n",
		"lightning_logs/v0/x.txt": "x",
	})
	p, err := ray.PackageDir(dir, []string{"logs", "lightning_logs/"})
	require.NoError(t, err)
	assert.Equal(t, []string{".gitignore", ".rayignore", "keep.ckpt", "notes/.gitignore", "notes/final.md",
		"other/draft.md", "requirements.txt", "train.py"}, zipNames(t, p.Zip))
	assert.Contains(t, p.Excluded, "model.ckpt")
	assert.Contains(t, p.Excluded, ".git")
	// "deep" only holds excluded files: not physically empty, so Ray leaves it
	// out of the zip (only empty directories get an entry).
	assert.Contains(t, p.Excluded, "deep/__pycache__")
}

func TestPackageTooBigIsRefusedBeforeUpload(t *testing.T) {
	dir := writeTree(t, map[string]string{"train.py": "x"})
	f, err := os.Create(filepath.Join(dir, "weights.bin"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(ray.MaxPackageBytes+1)) // sparse: no real disk use
	require.NoError(t, f.Close())

	srv := raytest.NewLab(t, "")
	c := client(t, srv, "")
	_, err = c.PrepareRuntimeEnv(context.Background(), map[string]any{"working_dir": "."}, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the Ray dashboard's 100 MiB upload limit")
	assert.Contains(t, err.Error(), "weights.bin")
	assert.Contains(t, clierr.Hint(err), ".rayignore")
	assert.Empty(t, srv.Calls(), "nothing may reach the dashboard")
}

func TestUploadOrderAndNoSecondPut(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"train.py": "print('hi')\n", "requirements.txt": "torch\n# comment\nlightning\n\ntorch\n",
		"runtime.json": `{"pip": "requirements.txt", "env_vars": {"FOOD11_DATA_DIR": "/mnt/Food-11"}, "working_dir": "."}`,
	})
	srv := raytest.NewLab(t, "")
	c := client(t, srv, "")
	ctx := context.Background()
	env, err := ray.LoadRuntimeEnv(filepath.Join(dir, "runtime.json"))
	require.NoError(t, err)

	prep, err := c.PrepareRuntimeEnv(ctx, env, dir)
	require.NoError(t, err)
	assert.True(t, prep.Uploaded)
	assert.Equal(t, ".", env["working_dir"], "the caller's map is not modified")
	uri := prep.RuntimeEnv["working_dir"].(string)
	assert.Regexp(t, `^gcs://_ray_pkg_[0-9a-f]{16}\.zip$`, uri)
	assert.Equal(t, map[string]any{"packages": []any{"torch", "lightning"}, "pip_check": false}, prep.RuntimeEnv["pip"])
	_, err = c.Submit(ctx, ray.SubmitRequest{Entrypoint: "python train.py", RuntimeEnv: prep.RuntimeEnv})
	require.NoError(t, err)

	pkgPath := "/api/packages/gcs/" + strings.TrimPrefix(uri, "gcs://")
	assert.Equal(t, []string{"GET " + pkgPath, "PUT " + pkgPath, "POST /api/jobs/"}, srv.Calls())
	stored, ok := srv.Package(strings.TrimPrefix(uri, "gcs://"))
	require.True(t, ok)
	assert.Equal(t, prep.Package.Zip, stored)

	// Same content again: the GET finds it, no second PUT.
	prep2, err := c.PrepareRuntimeEnv(ctx, env, dir)
	require.NoError(t, err)
	assert.False(t, prep2.Uploaded)
	assert.Equal(t, uri, prep2.RuntimeEnv["working_dir"])
	assert.Len(t, srv.CallsWithPrefix("PUT "), 1)
	assert.Len(t, srv.CallsWithPrefix("GET /api/packages/"), 2)

	// A URI working_dir is passed through untouched.
	prep3, err := c.PrepareRuntimeEnv(ctx, map[string]any{"working_dir": "s3://bucket/pkg.zip"}, dir)
	require.NoError(t, err)
	assert.Nil(t, prep3.Package)
	assert.Equal(t, "s3://bucket/pkg.zip", prep3.RuntimeEnv["working_dir"])
}

func TestRuntimeEnvErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"bad.json": "[1,2]"})
	srv := raytest.NewLab(t, "")
	c := client(t, srv, "")
	_, err := c.PrepareRuntimeEnv(context.Background(), map[string]any{"pip": "missing.txt"}, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.txt")
	_, err = c.PrepareRuntimeEnv(context.Background(), map[string]any{"py_modules": "./lib"}, dir)
	require.Error(t, err)
	_, err = ray.LoadRuntimeEnv(filepath.Join(dir, "bad.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a JSON object")
	_, err = ray.LoadRuntimeEnv(filepath.Join(dir, "nope.json"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestNodesIgnoreUnknownFields(t *testing.T) {
	srv := raytest.NewModel(t, raymodel.Config{}, "")
	srv.LaterRay()
	srv.JoinNodes([]ray.Node{
		{NodeID: "h", NodeIP: "172.18.0.2", IsHeadNode: true, State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 4}},
		{NodeID: "w0", NodeIP: "172.18.0.3", State: "ALIVE", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": 1}},
		{NodeID: "w1", NodeIP: "172.18.0.4", State: "DEAD", ResourcesTotal: map[string]float64{"CPU": 32, "GPU": 2}},
	}...)
	nodes, err := client(t, srv, "").Nodes(context.Background())
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	assert.True(t, nodes[0].IsHeadNode)
	max, n := ray.MaxGPUsPerNode(nodes)
	assert.Equal(t, 1.0, max, "dead nodes do not count")
	assert.Equal(t, "w0", n.NodeID)
}
