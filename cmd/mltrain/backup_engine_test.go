package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/mltrain/mltrain/lab/labtest"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/state"
)

// labBucket is the stand-in lab's bucket "ray" as its MinIO root user.
func labBucket(t *testing.T, dir string) *minio.Client {
	t.Helper()
	d := state.Dir(dir)
	st, err := d.State()
	require.NoError(t, err)
	creds, err := d.Credentials()
	require.NoError(t, err)
	mc, err := minio.New(strings.TrimPrefix(st.Probes.MinIO, "http://"), &minio.Options{Creds: credentials.NewStaticV4(creds.MinIOAccessKey, creds.MinIOSecretKey, "")})
	require.NoError(t, err)
	return mc
}

func bucketObjects(t *testing.T, mc *minio.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for o := range mc.ListObjects(ctx, "ray", minio.ListObjectsOptions{Recursive: true}) {
		require.NoError(t, o.Err)
		obj, err := mc.GetObject(ctx, "ray", o.Key, minio.GetObjectOptions{})
		require.NoError(t, err)
		b, err := io.ReadAll(obj)
		require.NoError(t, err)
		out[o.Key] = string(b)
	}
	return out
}

// A lease's end and the next: backup, 'down --volumes' and the state dir
// gone, a fresh 'up' (new credentials, an empty MinIO), restore: the
// checkpoints and the workspace come back byte for byte.
func TestBackupSurvivesDownVolumesAndAFreshUp(t *testing.T) {
	s := newStandin(t)
	_, stderr, code := runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up: %s", stderr)

	ctx := context.Background()
	mc := labBucket(t, s.stateDir)
	ckpt := bytes.Repeat([]byte{1, 2, 3, 250}, 1<<18)
	for k, v := range map[string][]byte{
		"food11-ray-x/checkpoint_2026-11-29_05-00-00.000001/checkpoint.ckpt": ckpt,
		"food11-ray-x/checkpoint_manager_snapshot.json":                      []byte(`{"checkpoint_results": []}`),
	} {
		_, err := mc.PutObject(ctx, "ray", k, bytes.NewReader(v), int64(len(v)), minio.PutObjectOptions{})
		require.NoError(t, err)
	}
	// A Ray Train run of the lab's own: the stand-in's Train writes its
	// checkpoints and Train V2's snapshot to MinIO; its name is the job's
	// submission id.
	stdout, stderr, code := runBin(t, binRun{args: append([]string{"lab", "multi", "--quick", "--fake-data"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "lab multi: %s%s", stdout, stderr)
	m := regexp.MustCompile(`submitted (mltrain-multi-\S+):`).FindStringSubmatch(stdout + stderr)
	require.NotNil(t, m, "lab multi names its job: %s%s", stdout, stderr)
	run := m[1]

	ws := filepath.Join(s.stateDir, "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "mine.py"), []byte("print('my work')\n"), 0o644))
	objects := bucketObjects(t, mc)
	work := fileContents(t, ws)

	dest := filepath.Join(t.TempDir(), "lease.tar.gz")
	_, stderr, code = runBin(t, binRun{args: append([]string{"backup", dest}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "backup: %s", stderr)
	// And to S3, configured as users do (a second MinIO stands in for it).
	remote := labtest.StartMinIO(t)
	s3env := append(slices.Clone(s.env), "AWS_ENDPOINT_URL="+remote.URL, "AWS_ACCESS_KEY_ID="+remote.RootUser,
		"AWS_SECRET_ACCESS_KEY="+remote.RootPassword, "AWS_REGION=us-east-1")
	_, stderr, code = runBin(t, binRun{args: append([]string{"backup", "s3://lease-backups/ada"}, s.lab()...), env: s3env})
	require.Equal(t, 0, code, "backup to S3: %s", stderr)

	_, stderr, code = runBin(t, binRun{args: append([]string{"down", "--volumes", "--yes"}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "down --volumes: %s", stderr)
	require.NoError(t, os.RemoveAll(s.stateDir), "the next lease starts without the state dir")
	_, stderr, code = runBin(t, binRun{args: s.upArgs(), env: s.env})
	require.Equal(t, 0, code, "up again: %s", stderr)
	mc = labBucket(t, s.stateDir)
	require.NotEqual(t, objects, bucketObjects(t, mc), "the fresh lab starts without the checkpoints")

	// From S3 first, then the file over it (it converges: all match).
	stdout, stderr, code = runBin(t, binRun{args: append([]string{"restore", "s3://lease-backups/ada"}, s.lab()...), env: s3env})
	require.Equal(t, 0, code, "restore from S3: %s", stderr)
	assert.Contains(t, stdout, fmt.Sprintf("Restored %d objects", len(objects)))
	assert.Equal(t, objects, bucketObjects(t, mc))
	assert.Equal(t, work, fileContents(t, ws))
	assert.Contains(t, work, "mine.py")

	stdout, stderr, code = runBin(t, binRun{args: append([]string{"restore", dest}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "restore: %s\n%s", stdout, stderr)
	assert.Equal(t, objects, bucketObjects(t, mc))
	assert.Equal(t, work, fileContents(t, ws))

	// The run goes on from its restored checkpoint: Ray Train reloads its
	// snapshot and hands the latest checkpoint to the new worker group.
	stdout, stderr, code = runBin(t, binRun{args: append([]string{"lab", "multi", "--quick", "--fake-data", "--resume", run}, s.lab()...), env: s.env})
	require.Equal(t, 0, code, "lab multi --resume: %s%s", stdout, stderr)
	assert.Regexp(t, "run "+run+" resumed from checkpoint_epoch_0+1 \\(epoch 1\\)", stdout+stderr)
}

// fileContents is every file under dir, relative path -> content.
func fileContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	}))
	return out
}
