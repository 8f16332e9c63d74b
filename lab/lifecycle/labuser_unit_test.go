package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

// The lab-user line of up says what happened to the user in words (created,
// updated and why, unchanged), never an error's text: a fresh MinIO has no
// policy yet, which once showed as "set (policy ...: The canned policy does
// not exist...)" in a success line.
func TestUpSaysWhatItDidToTheLabUserInWords(t *testing.T) {
	f := newFakeLab(t)
	line := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var rec progress.Recorder
		_, err := lifecycle.Up(ctx, f.deps(&rec), f.opts)
		require.NoError(t, err)
		for _, e := range rec.Events() {
			if e.Step == "minio lab user" && e.Kind == progress.Done {
				return e.Message
			}
		}
		t.Fatalf("no lab-user line in %v", rec.Events())
		return ""
	}
	assert.Equal(t, `created, bucket "ray" only`, line(), "a fresh MinIO")
	assert.Equal(t, `unchanged, bucket "ray" only`, line(), "a second up")
	c, err := f.state.Credentials()
	require.NoError(t, err)
	f.s3.AttachPolicy(c.MinIOLabAccessKey, "readwrite")
	assert.Equal(t, `updated (user limited to policy mltrain-bucket-ray), bucket "ray" only`, line(), "someone widened the user")
}
