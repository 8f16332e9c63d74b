package backup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"lab.tar.gz":        {File: "lab.tar.gz"},
		"/tmp/x/lab.tar.gz": {File: "/tmp/x/lab.tar.gz"},
		"s3://bucket":       {Bucket: "bucket"},
		"s3://bucket/":      {Bucket: "bucket"},
		"s3://bucket/a/b/":  {Bucket: "bucket", Prefix: "a/b/"},
		"s3://bucket/alice": {Bucket: "bucket", Prefix: "alice/"},
	} {
		got, err := ParseTarget(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"lab.tar", "lab.zip", "s3://", "s3:///prefix", ""} {
		_, err := ParseTarget(bad)
		assert.Error(t, err, bad)
	}
}

func TestManifestRefusesPathsThatLeave(t *testing.T) {
	sum := "0000000000000000000000000000000000000000000000000000000000000000"
	for _, p := range []string{"../etc/passwd", "/etc/passwd", "workspace/../../x", "a//b", ""} {
		_, err := decodeManifest([]byte(`{"version": 1, "entries": [{"path": "`+p+`", "size": 1, "sha256": "`+sum+`"}]}`), "test")
		assert.Error(t, err, p)
	}
	m, err := decodeManifest([]byte(`{"version": 1, "entries": [{"path": "workspace/train.py", "size": 1, "sha256": "`+sum+`"}]}`), "test")
	require.NoError(t, err)
	assert.Len(t, m.Entries, 1)
}
