package backup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/backup"
)

// docsCheck is the shell block docs/BACKUP.md gives under "Checking a
// backup with standard tools".
var docsCheck = regexp.MustCompile("(?s)## Checking a backup with standard tools.*?```sh\n(.*?)```")

// What docs/BACKUP.md tells anyone to type to check a backup, run as
// written (tar, jq, sha256sum) on a real one: every file verifies. A
// corrupted file in the extracted copy fails the same lines.
func TestTheDocsCheckOfABackupRuns(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no jq on PATH (.ci/run installs it)")
		}
		t.Skip("no jq on PATH: apt-get install jq")
	}
	page, err := os.ReadFile("../../docs/BACKUP.md")
	require.NoError(t, err)
	m := docsCheck.FindSubmatch(page)
	require.NotNil(t, m, "docs/BACKUP.md has its check block")
	script := string(m[1])

	src := newLab(t)
	src.fill(t)
	dir := t.TempDir()
	res, err := backup.Backup(context.Background(), src.Lab, backup.Target{File: filepath.Join(dir, "lab.tar.gz")}, backup.Options{})
	require.NoError(t, err)

	run := func(script string) (string, error) {
		cmd := exec.Command("sh", "-e", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(script)
	require.NoError(t, err, out)
	assert.Equal(t, res.Files, strings.Count(out, ": OK\n"), "every file of the manifest verifies:\n%s", out)
	assert.Contains(t, out, "manifest.json", "tar -tzf lists the manifest")

	// Its check line, in the extracted copy, once a file changed there.
	lines := strings.Split(strings.TrimSpace(script), "\n")
	check := lines[len(lines)-1]
	require.Contains(t, check, "sha256sum -c")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "workspace", "train.py"), []byte("changed"), 0o644))
	cmd := exec.Command("sh", "-c", check)
	cmd.Dir = filepath.Join(dir, "x")
	bad, err := cmd.CombinedOutput()
	assert.Error(t, err, "a changed file fails the check:\n%s", bad)
	assert.Contains(t, string(bad), "workspace/train.py: FAILED")
}
