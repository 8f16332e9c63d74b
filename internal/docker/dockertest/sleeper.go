package dockertest

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mltrain/mltrain/internal/docker"
)

// SleeperImage builds (once per tag) the sleeper test program as an image: it
// waits for SIGTERM, can exit on cue (EXIT_AFTER, EXIT_CODE) and answers
// `/app health|fail` as a healthcheck. Tests in any package call it without
// knowing where this package's testdata lives.
func SleeperImage(t testing.TB, eng docker.Engine) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	return GoImage(t, eng, "mltrain-test/sleeper:dev", filepath.Join(filepath.Dir(self), "testdata", "sleeper"), nil)
}
