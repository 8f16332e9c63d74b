package main

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/progress"
)

// zips are the Food-11-shaped zips of this test process, made once each.
var zips struct {
	mu    sync.Mutex
	dir   string
	paths map[string]string
}

// food11Zip writes (once per process) a zip shaped like Food-11 with
// perSplit images per split, <c>_<n>.jpg spread over the 11 classes
// (skipping class skip in split skipIn), random bodies of 2-10 KB stored
// as they are (JPEGs do not compress): about 100 MB for the real counts,
// enough for the load to draw its bar for seconds.
func food11Zip(t *testing.T, name string, perSplit map[string]int, skipIn string, skip int) string {
	t.Helper()
	zips.mu.Lock()
	defer zips.mu.Unlock()
	if p, ok := zips.paths[name]; ok {
		return p
	}
	if zips.dir == "" {
		dir, err := os.MkdirTemp("", "mltrain-food11-")
		require.NoError(t, err)
		zips.dir, zips.paths = dir, map[string]string{}
	}
	p := filepath.Join(zips.dir, name)
	f, err := os.Create(p)
	require.NoError(t, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(bw)
	rng := rand.New(rand.NewChaCha8([32]byte{11}))
	body := make([]byte, 10<<10)
	for _, s := range food11.Splits {
		for i := 0; i < perSplit[s]; i++ {
			c := i % food11.NumClasses
			if s == skipIn && c == skip {
				continue
			}
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%s/%d_%d.jpg", s, c, i/food11.NumClasses), Method: zip.Store})
			require.NoError(t, err)
			b := body[:2<<10+rng.IntN(8<<10)]
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			_, err = w.Write(b)
			require.NoError(t, err)
		}
	}
	require.NoError(t, zw.Close())
	require.NoError(t, bw.Flush())
	require.NoError(t, f.Close())
	zips.paths[name] = p
	return p
}

func canonicalZip(t *testing.T) string {
	return food11Zip(t, "food11-shaped.zip", food11.CanonicalTotals, "", -1)
}

// offZip has no validation/class_10 (3,119 validation images) and 3,000
// evaluation images: loaded with --allow-missing-classes, with three warnings.
func offZip(t *testing.T) string {
	return food11Zip(t, "food11-off.zip", map[string]int{"training": 9866, "validation": 3430, "evaluation": 3000}, "validation", 10)
}

// testVolume is a volume name for one test; the volume is removed at its end.
func testVolume(t *testing.T, eng docker.Engine) string {
	t.Helper()
	name := fmt.Sprintf("mltrain-test-tty-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, eng.VolumeRemove(ctx, name), "remove the test's volume (a helper container left on it would keep it)")
	})
	return name
}

func dataArgs(zip, vol string) []string {
	return []string{"data", "food11", "--zip", zip, "--volume", vol}
}

// took drops a line's "(1.2s)": screens are compared without timings.
var took = regexp.MustCompile(` \(\d[\dhms.]*\)$`)

func untimed(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = took.ReplaceAllString(l, "")
	}
	return out
}

// matchLines asserts each line matches its pattern, in order, nothing more.
func matchLines(t *testing.T, patterns, lines []string) {
	t.Helper()
	if !assert.Len(t, lines, len(patterns), "lines:\n%s", strings.Join(lines, "\n")) {
		return
	}
	for i, p := range patterns {
		assert.Regexp(t, "^"+p+"$", lines[i], "line %d", i)
	}
}

const sha = `[0-9a-f]{64}`

func TestDataFood11InATerminal(t *testing.T) {
	eng := dockertest.Engine(t)
	zip := canonicalZip(t)
	vol := testVolume(t, eng)
	run := runTerm(t, TermOptions{Args: dataArgs(zip, vol), Env: []string{"MLTRAIN_STATE_DIR=" + t.TempDir()}})

	assert.Equal(t, 0, run.Code)
	assert.GreaterOrEqual(t, run.Redraws, 1, "the live view redrew while the load ran")
	assert.Regexp(t, `⠋|⠙|⠹|⠸|⠼|⠴|⠦|⠧|⠇|⠏`, run.Output, "a spinner")
	assert.Regexp(t, `load food11-shaped\.zip into volume `+vol+` +\d+s +\[[=>-]+\] +[\d.]+ [KM]iB / 9\d MiB`, run.Output,
		"the load's row with its bar and amounts")
	matchLines(t, []string{
		`✓ checksum food11-shaped\.zip: sha256 ` + sha,
		`✓ load food11-shaped\.zip into volume ` + vol + `: 16643 images`,
		`volume ` + vol + ` loaded: sha256 ` + sha,
		`  16643 images: training 9866, validation 3430, evaluation 3347`,
		`workers mount it read-only at /mnt: FOOD11_DATA_DIR=/mnt/Food-11`,
	}, untimed(run.Screen))
}

func TestDataFood11WithWarningsInATerminal(t *testing.T) {
	eng := dockertest.Engine(t)
	zip := offZip(t)
	vol := testVolume(t, eng)
	run := runTerm(t, TermOptions{Args: append(dataArgs(zip, vol), "--allow-missing-classes"), Env: []string{"MLTRAIN_STATE_DIR=" + t.TempDir()}})

	assert.Equal(t, 0, run.Code)
	assert.GreaterOrEqual(t, run.Redraws, 1)
	matchLines(t, []string{
		`✓ checksum food11-off\.zip: sha256 ` + sha,
		`✓ load food11-off\.zip into volume ` + vol + `: 15985 images`,
		`! validation has 3,119 images; canonical Food-11 has 3,430`,
		`! validation/class_10 is empty; all 11 classes are expected in every split`,
		`! evaluation has 3,000 images; canonical Food-11 has 3,347`,
		`volume ` + vol + ` loaded: sha256 ` + sha,
		`  15985 images: training 9866, validation 3119, evaluation 3000`,
		`workers mount it read-only at /mnt: FOOD11_DATA_DIR=/mnt/Food-11`,
	}, untimed(run.Screen))
}

func TestDataFood11Piped(t *testing.T) {
	eng := dockertest.Engine(t)
	zip := offZip(t)
	vol := testVolume(t, eng)
	env := []string{"MLTRAIN_STATE_DIR=" + t.TempDir()}
	args := append(dataArgs(zip, vol), "--allow-missing-classes")
	stdout, stderr, code := runPiped(t, env, args...)

	assert.Equal(t, 0, code, stderr)
	assert.False(t, ansi(stdout+stderr), "no escape sequences in a pipe:\n%q", stderr)
	matchLines(t, []string{
		`• checksum food11-off\.zip: [\d.]+ MiB`,
		`✓ checksum food11-off\.zip: sha256 ` + sha,
		`• load food11-off\.zip into volume ` + vol + `: 15985 images, [\d.]+ MiB`,
		`✓ load food11-off\.zip into volume ` + vol + `: 15985 images`,
		`! validation has 3,119 images; canonical Food-11 has 3,430`,
		`! validation/class_10 is empty; all 11 classes are expected in every split`,
		`! evaluation has 3,000 images; canonical Food-11 has 3,347`,
	}, untimed(strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")))
	assert.Contains(t, stdout, "volume "+vol+" loaded: sha256 ")

	// A second run finds the load done; --json makes stderr events, stdout the result.
	stdout, stderr, code = runPiped(t, env, append(args, "--json")...)
	assert.Equal(t, 0, code, stderr)
	assert.False(t, ansi(stdout+stderr))
	var kinds []progress.Kind
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var e progress.Event
		require.NoError(t, json.Unmarshal([]byte(l), &e), "stderr line %q", l)
		kinds = append(kinds, e.Kind)
	}
	assert.Contains(t, kinds, progress.Done)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	assert.Equal(t, vol, res["volume"])
}

func TestDataFood11CtrlCInATerminal(t *testing.T) {
	eng := dockertest.Engine(t)
	zip := canonicalZip(t)
	vol := testVolume(t, eng)
	args := dataArgs(zip, vol)
	loading := regexp.MustCompile(`load food11-shaped\.zip into volume \S+ +\d+s +\[[=>-]+\] +[\d.]+ [KM]iB / `)
	run := runTerm(t, TermOptions{
		Args:  args,
		Env:   []string{"MLTRAIN_STATE_DIR=" + t.TempDir()},
		Input: []Input{{When: loading.MatchString, Keys: "\x03"}}, // Ctrl-C while the load's bar shows
	})

	assert.Equal(t, 130, run.Code)
	assert.Contains(t, run.Output, "^C", "the terminal echoed Ctrl-C below the rows; the next frame must still start at column 0")
	screen := untimed(run.Screen)
	assert.NotContains(t, strings.Join(screen, "\n"), "context canceled")
	rerun := "mltrain " + strings.Join(args, " ")
	matchLines(t, []string{
		`✓ checksum food11-shaped\.zip: sha256 ` + sha,
		`✗ load food11-shaped\.zip into volume ` + vol + `: cancelled`,
		`Error: interrupted: ` + regexp.QuoteMeta(rerun) + ` stopped during: .+`,
		`Next: run '` + regexp.QuoteMeta(rerun) + `' again to finish: a re-run converges from whatever is in place`,
	}, screen)
}
