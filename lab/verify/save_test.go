package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/state"
)

// The kept report is the JSON 'verify --json' prints (cmd's printJSON:
// indented two spaces, a newline), 0600, replaced whole by the next one,
// with any of the lab's secrets redacted.
func TestSaveKeepsTheLastReport(t *testing.T) {
	d := state.Dir(t.TempDir())
	const token = "raytoken0123456789abcdef"
	require.NoError(t, d.WriteJSON(state.CredentialsFile, map[string]string{"ray_auth_token": token}))

	first := sampleReport()
	require.NoError(t, Save(d, first))
	second := sampleReport()
	second.Checks[0].Evidence = "answered with header Authorization: Bearer " + token
	second.Project = "second"
	require.NoError(t, Save(d, second))

	b, err := os.ReadFile(d.File(state.VerifyReportFile))
	require.NoError(t, err)
	second.Checks[0].Evidence = "answered with header Authorization: Bearer REDACTED"
	want, err := json.MarshalIndent(second, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", string(b), "the last report, as --json prints it")
	assert.NotContains(t, string(b), token)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "second", back.Project)

	info, err := os.Stat(d.File(state.VerifyReportFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	entries, err := os.ReadDir(d.File(state.ReportsDir))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temp file left beside it")
}

// A state dir that cannot be written is an error naming the file's place,
// not a panic or a half-written file.
func TestSaveIntoAStateDirThatCannotTakeIt(t *testing.T) {
	// A file where the reports folder goes: refused for root too (a
	// read-only directory is not, and CI runs as root).
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, state.ReportsDir), []byte("not a folder"), 0o600))
	err := Save(state.Dir(dir), sampleReport())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "saving the verify report in "+filepath.Join(dir, state.ReportsDir))
	b, err := os.ReadFile(filepath.Join(dir, state.ReportsDir))
	require.NoError(t, err)
	assert.Equal(t, "not a folder", string(b), "nothing half-written")
}
