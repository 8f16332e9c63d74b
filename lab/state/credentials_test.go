package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/plan"
)

func TestCredentialsCreatedOnceAndStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	a, err := create(dir)
	require.NoError(t, err)
	require.NoError(t, a.Validate())

	st, err := os.Stat(filepath.Join(dir, CredentialsFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	dst, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dst.Mode().Perm(), "the state dir is private")

	b, err := create(dir)
	require.NoError(t, err)
	assert.Equal(t, a, b, "a second run reuses the stored secrets")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temp files left behind")
}

func TestCredentialsAreRandom(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		c := plan.GenerateCredentials()
		for _, v := range []string{c.MinIOAccessKey, c.MinIOSecretKey, c.MinIOLabAccessKey, c.MinIOLabSecretKey, c.GrafanaAdminPassword, c.JupyterToken, c.RayAuthToken} {
			assert.False(t, seen[v], "secret repeated: %s", v)
			seen[v] = true
			assert.NotContains(t, v, "$", "Compose would interpolate it")
		}
		assert.Len(t, c.MinIOAccessKey, 20)
		assert.Len(t, c.MinIOLabAccessKey, 20, "MinIO's limit for an access key")
		assert.Len(t, c.MinIOLabSecretKey, 40, "MinIO's limit for a secret key")
		assert.GreaterOrEqual(t, len(c.MinIOSecretKey), 40)
		assert.Len(t, c.RayAuthToken, 64)
		assert.Len(t, c.JupyterToken, 48)
	}
	a, err := create(t.TempDir())
	require.NoError(t, err)
	b, err := create(t.TempDir())
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "two labs get different secrets")
}

func TestLooseCredentialsPermissionsRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := create(dir)
	require.NoError(t, err)
	path := filepath.Join(dir, CredentialsFile)
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = create(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "0644")
	assert.Equal(t, "chmod 600 "+path, clierr.Hint(err))
}

func TestUnwritableStateDir(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere; a file in the way still fails for root.
		parent := t.TempDir()
		blocker := filepath.Join(parent, "file")
		require.NoError(t, os.WriteFile(blocker, nil, 0o600))
		_, err := create(filepath.Join(blocker, "state"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(blocker, "state"))
		assert.Contains(t, clierr.Hint(err), "--state-dir")
		return
	}
	parent := t.TempDir()
	require.NoError(t, os.Chmod(parent, 0o500))
	t.Cleanup(func() { os.Chmod(parent, 0o700) })
	dir := filepath.Join(parent, "state")
	_, err := create(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, clierr.Hint(err), "--state-dir")
}

func TestOlderCredentialsFileIsCompletedNotReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CredentialsFile)
	old := `{"minio_access_key":"OLDKEY","minio_secret_key":"OLDSECRET","grafana_admin_password":"OLDPW","jupyter_token":"OLDTOKEN"}`
	require.NoError(t, os.WriteFile(path, []byte(old), 0o600))
	c, err := create(dir)
	require.NoError(t, err)
	assert.Equal(t, "OLDKEY", c.MinIOAccessKey)
	assert.Equal(t, "OLDSECRET", c.MinIOSecretKey)
	assert.Equal(t, "OLDPW", c.GrafanaAdminPassword)
	assert.Len(t, c.RayAuthToken, 64)
	// The lab user is new in this mltrain: the next up creates it in MinIO.
	assert.Len(t, c.MinIOLabAccessKey, 20)
	assert.Len(t, c.MinIOLabSecretKey, 40)
	assert.NotEqual(t, c.MinIOAccessKey, c.MinIOLabAccessKey)
	require.NoError(t, c.Validate())
	var stored plan.Credentials
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &stored))
	assert.Equal(t, c, stored)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestCorruptCredentialsNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CredentialsFile)
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	_, err := create(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.True(t, strings.Contains(clierr.HintWith(err, clierr.Plain), "move it away"))
}

func TestConcurrentFirstRunsAgree(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	got := make([]plan.Credentials, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = create(dir)
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		assert.Equal(t, got[0], got[i])
	}
}

// create is what up and render do: load the lab's credentials, or make them.
func create(dir string) (plan.Credentials, error) {
	c, _, err := Dir(dir).CreateCredentials()
	return c, err
}

func TestReadingNeverCreates(t *testing.T) {
	dir := t.TempDir()
	_, err := Dir(dir).Credentials()
	require.Error(t, err)
	path := filepath.Join(dir, CredentialsFile)
	assert.Contains(t, err.Error(), path, "the error names the missing file")
	assert.Contains(t, clierr.HintWith(err, clierr.Plain), "mltrain up")
	assert.Contains(t, clierr.HintWith(err, clierr.Plain), "mltrain down --volumes")
	assert.Contains(t, clierr.HintWith(err, onLab("lab2")), "run 'mltrain --project lab2 up' to re-create the lab", "the next step acts on the user's lab")
	_, statErr := os.Stat(path)
	assert.True(t, os.IsNotExist(statErr), "no credentials.json appears")

	c, created, err := Dir(dir).CreateCredentials()
	require.NoError(t, err)
	assert.True(t, created)
	read, err := Dir(dir).Credentials()
	require.NoError(t, err)
	assert.Equal(t, c, read)
	_, created, err = Dir(dir).CreateCredentials()
	require.NoError(t, err)
	assert.False(t, created, "a second up reuses them")
}

func TestReadingAnIncompleteFileSaysToRunUp(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, CredentialsFile), []byte(`{"minio_access_key":"K"}`), 0o600))
	_, err := Dir(dir).Credentials()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "minio_secret_key is empty")
	assert.Contains(t, clierr.HintWith(err, clierr.Plain), "mltrain up")
}

// onLab writes command lines for the lab named project, as the command layer does.
func onLab(project string) func(words ...string) string {
	return func(words ...string) string { return clierr.Plain(append([]string{"--project", project}, words...)...) }
}
