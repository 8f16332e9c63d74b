package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// The rest of issue 21's faults, as rows of the same table on one stand-in
// lab: two loads of one dataset volume (item 2), a full disk of the
// volume's own (item 3), a hostile zip (item 4), verify right after up
// (item 5), a service that exited and verify --json without a lab (item 7).
func TestFaultTableDataReadinessAndReports(t *testing.T) {
	f := &faultLab{standin: newStandin(t), t: t}
	ctx := context.Background()
	dir := t.TempDir()
	good := food11Zip(t, "food11-faults.zip", map[string]int{"training": 22, "validation": 11, "evaluation": 11}, "", 0)
	small, hostile, other := f.project+"-small", f.project+"-hostile", f.project+"-twice"
	for _, v := range []string{small, hostile, other} {
		t.Cleanup(func() { _ = f.eng.VolumeRemove(context.Background(), v) })
	}
	load := func(zip, vol string) []string {
		return append(append([]string{}, f.lab()...), "data", "food11", "--zip", zip, "--volume", vol)
	}
	traversal := filepath.Join(dir, "traversal.zip")
	writeRawZip(t, traversal, "training/../../etc/0_1.jpg")

	rows := []fault{{
		name: "a first up", say: `Lab .* is ready|✓ ready`,
	}, {
		name: "two loads of one dataset volume at the same moment",
		meet: func(f *faultLab) outcome {
			a, b := f.start(load(good, other)...), f.start(load(good, other)...)
			ra, rb := a.wait(f.t), b.wait(f.t)
			return outcome{ra.stdout + rb.stdout, ra.stderr + rb.stderr, max(ra.code, rb.code)}
		},
		say: `is loading dataset volume ` + re(other) + `; waiting for it \(Ctrl-C to stop\)`,
		survive: func(f *faultLab) {
			m, err := food11.ReadManifest(ctx, f.eng, food11.VerifyOptions{Volume: other})
			require.NoError(f.t, err)
			require.NotNil(f.t, m, "one complete dataset")
			assert.Equal(f.t, 44, m.Files)
		},
	}, {
		name: "a full disk of the volume's own during a load",
		fault: func(f *faultLab) {
			c, err := client.New(client.FromEnv)
			require.NoError(f.t, err)
			defer c.Close()
			_, err = c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: small, Driver: "local",
				DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=64k"}})
			require.NoError(f.t, err)
		},
		meet: func(f *faultLab) outcome { return f.mltrain(load(good, small)...) },
		code: 1,
		say:  `^dataset volume ` + re(small) + ` is out of space: .*\(driver local, device=tmpfs, o=size=64k, type=tmpfs, mounted at .*\)$`,
		next: `^free space on that filesystem, or load into a volume on a bigger disk with --volume NAME, then run '` +
			re(f.cmd("data", "food11", "--volume", small, "--zip", good)) + `'$`,
		survive: func(f *faultLab) {
			v, err := f.eng.VolumeInspect(ctx, small)
			require.NoError(f.t, err)
			assert.Equal(f.t, "size=64k", v.Options["o"], "the volume keeps its own disk")
		},
	}, {
		name: "a zip whose entries climb out of the dataset",
		meet: func(f *faultLab) outcome { return f.mltrain(load(traversal, hostile)...) },
		code: 1,
		say:  `is not a Food-11 zip: 1 bad entry: "training/\.\./\.\./etc/0_1\.jpg": path traversal`,
		next: `use the course's Food-11 zip`,
		survive: func(f *faultLab) {
			_, err := f.eng.VolumeInspect(ctx, hostile)
			assert.True(f.t, docker.IsNotFound(err), "a refused zip makes no volume (%v)", err)
		},
	}, {
		name: "verify right after an up that replaced a worker",
		fault: func(f *faultLab) {
			require.NoError(f.t, f.eng.ContainerRemove(ctx, f.container(f.t, service.WorkerService(1)), true))
		},
		meet: func(f *faultLab) outcome {
			if r := f.up(); r.code != 0 {
				return r
			}
			return f.mltrain(append([]string{"verify", "--json", "--only", "containers,ray,minio,metrics,jupyter"}, f.lab()...)...)
		},
		say: ``,
		survive: func(f *faultLab) {
			r := f.mltrain(append([]string{"status", "--json"}, f.lab()...)...)
			assert.Equal(f.t, 0, r.code, r.stdout+r.stderr)
		},
	}, {
		name: "a planned service whose container exited",
		fault: func(f *faultLab) {
			require.NoError(f.t, f.eng.ContainerStop(ctx, f.container(f.t, service.GrafanaService), 5*time.Second))
		},
		meet: func(f *faultLab) outcome { return f.mltrain(append([]string{"status"}, f.lab()...)...) },
		code: 1,
		say:  `1 planned service\(s\) not running: grafana \(exited\)`,
		next: `^run '` + re(f.cmd("up")) + `' to start them$`,
		fix:  func() string { return f.cmd("up") },
		recover: func(f *faultLab) {
			r := f.up()
			require.Equal(f.t, 0, r.code, r.stderr)
		},
		survive: func(f *faultLab) { f.oneWorkingLab() },
	}, {
		name: "verify --json where there is no lab",
		meet: func(f *faultLab) outcome {
			r := f.mltrain("verify", "--json", "--project", f.project, "--state-dir", dir)
			var got map[string]any
			require.NoError(f.t, json.Unmarshal([]byte(r.stdout), &got), "verify --json printed JSON: %q", r.stdout)
			assert.Equal(f.t, false, got["ok"])
			assert.Contains(f.t, got["next"], " up", "the JSON names the next command")
			return r
		},
		code: 1,
		say:  `^no lab state at ` + re(filepath.Join(dir, state.StateFile)) + `$`,
	}}
	runFaults(t, f, rows)
}

// writeRawZip writes a zip holding one entry named name.
func writeRawZip(t *testing.T, path, name string) {
	t.Helper()
	out, err := os.Create(path)
	require.NoError(t, err)
	w := zip.NewWriter(out)
	e, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
	require.NoError(t, err)
	_, _ = e.Write([]byte("x"))
	require.NoError(t, w.Close())
	require.NoError(t, out.Close())
}
