package fresh

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/service"
)

// knobs are the benchmark's settings, from the environment.
type knobs struct {
	rateMBps  int     // FRESH_RATE_MBPS: each link's rate, MB/s (10^6 bytes); default 50
	shared    bool    // FRESH_LINK=shared: the registry and the dataset share one link
	workerMiB int     // FRESH_WORKER_MIB: incompressible data in the worker image; default 1088
	zipScale  float64 // FRESH_ZIP_SCALE: the Food-11-shaped zip's file sizes; default 1 (1.08 GiB)
	cache     string  // MLTRAIN_BENCH_CACHE: where the zip is kept between runs
}

func readKnobs() knobs {
	k := knobs{rateMBps: 50, workerMiB: 1088, zipScale: 1, shared: os.Getenv("FRESH_LINK") == "shared"}
	if v, err := strconv.Atoi(os.Getenv("FRESH_RATE_MBPS")); err == nil && v > 0 {
		k.rateMBps = v
	}
	if v, err := strconv.Atoi(os.Getenv("FRESH_WORKER_MIB")); err == nil && v > 0 {
		k.workerMiB = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("FRESH_ZIP_SCALE"), 64); err == nil && v > 0 {
		k.zipScale = v
	}
	k.cache = os.Getenv("MLTRAIN_BENCH_CACHE")
	if k.cache == "" {
		home, _ := os.UserHomeDir()
		k.cache = filepath.Join(home, ".cache", "mltrain-bench")
	}
	return k
}

// workerLayers splits the worker image's data into layers shaped like a
// CUDA/ROCm Ray image's biggest ones (framework, libraries, Python
// packages, application), in MiB.
func workerLayers(total int) []int {
	shares := []float64{0.47, 0.24, 0.18, 0.11}
	var out []int
	left := total
	for i, s := range shares {
		n := int(float64(total) * s)
		if i == len(shares)-1 {
			n = left
		}
		out = append(out, n)
		left -= n
	}
	return out
}

// benchImages builds the lab's images for this run and pushes them to reg,
// then removes them from the engine: every role a stand-in (labtest), the
// worker (also the head, as in the course) with extra layers of random
// data. Each image starts with a layer unique to this run, so no layer of
// it is shared with an image the engine already has: a pull fetches all.
func benchImages(b *testing.B, eng docker.Engine, reg *dockertest.Registry, k knobs) map[service.Role]string {
	b.Helper()
	standins := labtest.BuildImages(b, eng)
	run := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	rayLabels := fmt.Sprintf("LABEL %s=%q %s=%q", labels.ImageRayVersion, dockerfiles.DefaultRayVersion, labels.ImagePythonVersion, dockerfiles.PythonVersion)
	type img struct {
		from, tail string
		layers     []int
	}
	imgs := map[string]img{
		"ray":        {standins["worker"], `ENTRYPOINT ["/app"]` + "\n" + rayLabels, workerLayers(k.workerMiB)},
		"jupyter":    {standins["jupyter"], `ENTRYPOINT ["/app"]`, nil},
		"grafana":    {standins["grafana"], `ENTRYPOINT ["/app"]`, nil},
		"prometheus": {standins["prometheus"], `ENTRYPOINT ["/app"]`, nil},
		"minio":      {standins["minio"], `ENTRYPOINT ["/usr/bin/minio"]` + "\nENV MINIO_CI_CD=1", nil},
	}
	refs := map[string]string{}
	for name, im := range imgs {
		local := "mltrain-bench/fresh-" + name + ":" + run
		df := "FROM scratch\nCOPY run-id /.mltrain-bench-run\nCOPY --from=" + im.from + " / /\n"
		for i := range im.layers {
			df += fmt.Sprintf("COPY layer%d /opt/layer%d\n", i, i)
		}
		df += im.tail + "\n"
		buildStreamed(b, eng, local, df, run, im.layers)
		refs[name] = reg.Ref("mltrain-bench/" + name + ":" + run)
		t0 := time.Now()
		dockertest.Push(b, local, refs[name])
		b.Logf("pushed %s in %s", refs[name], time.Since(t0).Round(time.Second))
		for _, r := range []string{refs[name], local} {
			if err := eng.ImageRemove(context.Background(), r); err != nil {
				b.Fatal(err)
			}
		}
	}
	out := map[service.Role]string{}
	for _, r := range service.Roles() {
		switch r {
		case service.RoleHead, service.RoleWorker:
			out[r] = refs["ray"]
		default:
			out[r] = refs[string(r)]
		}
	}
	return out
}

// buildStreamed builds tag from a context streamed to the engine: the
// Dockerfile, the run id, and a file of random bytes of each size (MiB),
// generated as they are sent.
func buildStreamed(b *testing.B, eng docker.Engine, tag, df, run string, mib []int) {
	b.Helper()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		put := func(name string, size int64, r io.Reader) error {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0)}); err != nil {
				return err
			}
			_, err := io.CopyN(tw, r, size)
			return err
		}
		err := put("Dockerfile", int64(len(df)), strings.NewReader(df))
		if err == nil {
			err = put("run-id", int64(len(run)), strings.NewReader(run))
		}
		for i, n := range mib {
			if err == nil {
				seed := [32]byte{byte(i), 'f', 'r', 'e', 's', 'h'}
				err = put(fmt.Sprintf("layer%d", i), int64(n)<<20, rand.NewChaCha8(seed))
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := eng.ImageBuild(ctx, docker.BuildOptions{Context: pr, Tags: []string{tag}, Labels: map[string]string{dockertest.TestLabel: "1"}}); err != nil {
		b.Fatalf("build %s: %v", tag, err)
	}
}

// food11Zip is the Food-11-shaped zip of bench/food11 (generated once,
// cached).
func food11Zip(b *testing.B, k knobs) string {
	b.Helper()
	name := "food11-shaped.zip"
	if k.zipScale != 1 {
		name = fmt.Sprintf("food11-shaped-x%g.zip", k.zipScale)
	}
	zip := filepath.Join(k.cache, name)
	if _, err := os.Stat(zip); err == nil {
		return zip
	}
	if err := os.MkdirAll(k.cache, 0o755); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("go", "run", "../food11/driver", "gen", "-out", zip, "-scale", fmt.Sprint(k.zipScale))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("generate %s: %v\n%s", zip, err, out)
	}
	return zip
}

// serveFile serves file at /<its name> on a loopback port (ranges
// included, as a web server does) and returns the address.
func serveFile(b *testing.B, file string) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+filepath.Base(file) {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, file)
	}))
	b.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// mltrainBinary builds this checkout's mltrain.
func mltrainBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mltrain")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/mltrain").CombinedOutput(); err != nil {
		b.Fatalf("go build mltrain: %v\n%s", err, out)
	}
	return bin
}
