package backup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/backup"
)

func clearAWS(t *testing.T) {
	for _, k := range append(backup.S3EnvKeys, "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY", "AWS_SECRET_KEY") {
		t.Setenv(k, "")
	}
}

// A profile of the credentials file is resolved here, and travels as the
// plain keys: the other host needs no ~/.aws of the instructor's.
func TestS3SettingsOfAProfileTravelAsKeys(t *testing.T) {
	clearAWS(t)
	file := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(file, []byte("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n"+
		"[course]\naws_access_key_id = AKIACOURSE\naws_secret_access_key = s3cr3t/with+chars=\naws_session_token = tok3n\n"), 0o600))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "course")
	t.Setenv("AWS_ENDPOINT_URL", "http://10.0.0.9:9000")
	t.Setenv("AWS_DEFAULT_REGION", "eu-west-1")

	s, err := backup.ResolveS3()
	require.NoError(t, err)
	assert.Equal(t, "AKIACOURSE", s.AccessKey)
	assert.Equal(t, "s3cr3t/with+chars=", s.SecretKey)
	env, err := s.Env()
	require.NoError(t, err)
	assert.Equal(t, "AWS_ENDPOINT_URL=http://10.0.0.9:9000\nAWS_ACCESS_KEY_ID=AKIACOURSE\nAWS_SECRET_ACCESS_KEY=s3cr3t/with+chars=\n"+
		"AWS_SESSION_TOKEN=tok3n\nAWS_REGION=eu-west-1\n", string(env))

	got, err := backup.ReadS3Env(strings.NewReader(string(env)))
	require.NoError(t, err)
	assert.Equal(t, s.Endpoint, got.Endpoint)
	assert.Equal(t, "AWS_ENDPOINT_URL", got.EndpointVar)
	assert.Equal(t, [4]string{s.AccessKey, s.SecretKey, s.SessionToken, s.Region}, [4]string{got.AccessKey, got.SecretKey, got.SessionToken, got.Region})
}

func TestReadS3EnvTakesOnlyTheAWSKeys(t *testing.T) {
	ok := "AWS_ACCESS_KEY_ID=a\nAWS_SECRET_ACCESS_KEY=b\n"
	for name, in := range map[string]string{
		"another variable": ok + "LD_PRELOAD=/tmp/evil.so\n",
		"a profile":        ok + "AWS_PROFILE=x\n",
		"not KEY=VALUE":    ok + "hello\n",
		"twice":            ok + "AWS_ACCESS_KEY_ID=c\n",
		"no keys":          "AWS_REGION=us-east-1\n",
	} {
		_, err := backup.ReadS3Env(strings.NewReader(in))
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "/tmp/evil.so", "a value is never echoed")
	}
	s, err := backup.ReadS3Env(strings.NewReader("\n" + ok + "AWS_ENDPOINT_URL=http://a:1\nAWS_ENDPOINT_URL_S3=http://b:2\n"))
	require.NoError(t, err)
	assert.Equal(t, "http://b:2", s.Endpoint, "AWS_ENDPOINT_URL_S3 wins, as aws s3 reads it")
}
