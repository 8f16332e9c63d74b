package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/labtest"
)

// backupLab is a state dir whose lab's MinIO is a real MinIO process with
// mib MiB of checkpoints: what 'mltrain backup' reads, without an engine.
func backupLab(t *testing.T, mib int) string {
	t.Helper()
	s := labtest.StartMinIO(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "train.py"), []byte("print(1)\n"), 0o644))
	st, _ := json.Marshal(map[string]any{"project": "mltrain", "plan": map[string]any{"workspace": ws}, "probes": map[string]any{"minio": s.URL}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), st, 0o600))
	creds, _ := json.Marshal(map[string]string{"minio_access_key": s.RootUser, "minio_secret_key": s.RootPassword,
		"minio_lab_access_key": "labuser0123", "minio_lab_secret_key": "labsecret0123456789", "grafana_admin_password": "grafanapw0123456",
		"jupyter_token": "jupytertoken0123456789", "ray_auth_token": "raytoken0123456789"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "credentials.json"), creds, 0o600))
	mc, err := minio.New(strings.TrimPrefix(s.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4(s.RootUser, s.RootPassword, "")})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, mc.MakeBucket(ctx, "ray", minio.MakeBucketOptions{}))
	for i := range mib / 16 {
		b := make([]byte, 16<<20)
		_, _ = rand.Read(b)
		_, err := mc.PutObject(ctx, "ray", fmt.Sprintf("run/checkpoint_%06d/model.pt", i), bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{})
		require.NoError(t, err)
	}
	return dir
}

// Ctrl-C during a backup under a terminal: exit 130, and no file at DEST
// nor a temp file beside it.
func TestBackupCtrlCLeavesNoFile(t *testing.T) {
	dir := backupLab(t, 256)
	out := t.TempDir()
	dest := filepath.Join(out, "lab.tar.gz")
	run := runTerm(t, TermOptions{Args: []string{"backup", dest, "--state-dir", dir},
		Input: []Input{{When: func(s string) bool { return strings.Contains(s, "backing up") }, Keys: "\x03"}}})
	assert.Equal(t, 130, run.Code)
	left, _ := os.ReadDir(out)
	assert.Empty(t, left, "no backup file, complete or partial")
}

// The whole command: a backup, then a restore into the same lab reports
// every file already matching; a DEST that is neither form is a usage error.
func TestBackupRestoreCommands(t *testing.T) {
	dir := backupLab(t, 16)
	dest := filepath.Join(t.TempDir(), "lab.tar.gz")
	stdout, stderr, code := runPiped(t, nil, "backup", dest, "--state-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Backed up 3 files")
	assert.Contains(t, stdout, "restore "+dest)

	stdout, stderr, code = runPiped(t, nil, "restore", dest, "--state-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Restored 1 objects and 0 files")
	assert.Contains(t, stdout, "1 already matched")

	_, stderr, code = runPiped(t, nil, "backup", filepath.Join(t.TempDir(), "lab.zip"), "--state-dir", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "neither a path ending in .tar.gz nor an s3://bucket/prefix URL")
	assert.Contains(t, stderr, "Next: run 'mltrain backup --help'", "the command layer names the command")

	_, stderr, code = runPiped(t, nil, "restore", "s3://", "--state-dir", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "names no bucket")
	assert.Contains(t, stderr, "Next: run 'mltrain restore --help'")
}

// A lab whose MinIO is not answering: the error names it and the next step
// is status, with the lab's flags.
func TestBackupOfALabWhoseMinIOIsDown(t *testing.T) {
	dir := t.TempDir()
	st, _ := json.Marshal(map[string]any{"project": "mltrain", "plan": map[string]any{"workspace": "workspace"}, "probes": map[string]any{"minio": "http://127.0.0.1:1"}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), st, 0o600))
	creds, _ := json.Marshal(map[string]string{"minio_access_key": "rootuser0123", "minio_secret_key": "rootsecret0123456789",
		"minio_lab_access_key": "labuser0123", "minio_lab_secret_key": "labsecret0123456789", "grafana_admin_password": "grafanapw0123456",
		"jupyter_token": "jupytertoken0123456789", "ray_auth_token": "raytoken0123456789"})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "credentials.json"), creds, 0o600))
	dest := filepath.Join(t.TempDir(), "lab.tar.gz")
	_, stderr, code := runPiped(t, nil, "backup", dest, "--state-dir", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "listing bucket ray of the lab's MinIO 127.0.0.1:1")
	assert.Contains(t, stderr, "Next: run 'mltrain --state-dir "+dir+" status'")
	assert.NoFileExists(t, dest)
}
