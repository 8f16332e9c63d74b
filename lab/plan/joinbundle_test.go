package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

func sampleBundle() JoinBundle {
	return JoinBundle{Lab: "mltrain", HeadIP: "10.52.0.7", GCSPort: 6379, Dashboard: 8265, RayToken: strings.Repeat("ab", 32),
		MinIO: "http://10.52.0.7:9000", Bucket: "ray", S3Access: "LABUSER", S3Secret: "labsecret", RayVersion: "2.54.0",
		Python: "3.12", ImageHash: "0123456789ab", ImageKind: "ray-cuda", PortBase: DefaultRayPortBase}
}

func TestJoinBundleRoundTrips(t *testing.T) {
	b := sampleBundle()
	s := b.Encode()
	assert.True(t, strings.HasPrefix(s, "mltrain-join-v1."))
	assert.NotContains(t, s, " ", "one pasteable word")
	back, err := DecodeJoinBundle("  " + s + "\n")
	require.NoError(t, err)
	assert.Equal(t, b, back)
	assert.Equal(t, "10.52.0.7:6379", back.GCSAddress())
	assert.Equal(t, "http://10.52.0.7:8265", back.DashboardURL())
}

func TestJoinBundleRefusesWhatCannotWork(t *testing.T) {
	good := sampleBundle().Encode()
	for name, tc := range map[string]struct{ in, want string }{
		"not a bundle":  {"hello", "not a join bundle"},
		"other version": {"mltrain-join-v9.abc", "another version of mltrain"},
		"cut":           {good[:len(good)-7] + "!!", "damaged"},
		"no token":      {func() string { b := sampleBundle(); b.RayToken = ""; return b.Encode() }(), "lacks ray_token"},
		"loopback head": {func() string { b := sampleBundle(); b.HeadIP = "127.0.0.1"; return b.Encode() }(), "not one another host can reach"},
		"bad port":      {func() string { b := sampleBundle(); b.GCSPort = 0; return b.Encode() }(), "are not ports"},
	} {
		_, err := DecodeJoinBundle(tc.in)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.Contains(t, clierr.Hint(err), "mltrain join-token", name)
		assert.Equal(t, clierr.ExitUsage, clierr.Code(err), "%s: a bad argument is a usage error", name)
	}
}
