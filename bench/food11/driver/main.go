// Command driver is the Food-11 load benchmark's helper: it generates a
// Food-11-shaped zip (gen) and runs mltrain's load into a volume (load), so
// the bench script can time it and read its peak RSS with /usr/bin/time -v.
// It is not part of mltrain.
package main

import (
	"archive/zip"
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/atomicfile"
	"github.com/mltrain/mltrain/internal/docker"
)

func main() {
	if ran, code := food11.ExtractorMain(os.Stdout); ran {
		os.Exit(code) // this process was the extractor in the helper container
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: driver gen|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

// gen writes a zip shaped like Food-11: 9,866/3,430/3,347 entries named
// <c>_<n>.jpg, random (incompressible, like JPEG) bodies, stored, with
// sizes spread log-normally around the real mean (~70 KB, 1.16 GB total).
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", "", "zip to write")
	scale := fs.Float64("scale", 1, "multiply every file size by this")
	_ = fs.Parse(args)
	f, err := atomicfile.Create(*out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort() // no-op after Commit
	bw := bufio.NewWriterSize(f, 4<<20)
	zw := zip.NewWriter(bw)
	rng := rand.New(rand.NewChaCha8([32]byte{11}))
	buf := make([]byte, 4<<20)
	var total int64
	for _, s := range food11.Splits {
		for i := 0; i < food11.CanonicalTotals[s]; i++ {
			// log-normal: median ~58 KB, mean ~70 KB, clamped to 4 KB..1 MB
			size := int(math.Exp(rng.NormFloat64()*0.6+math.Log(58_000)) * *scale)
			size = max(4096, min(size, 1<<20))
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%s/%d_%d.jpg", s, i%food11.NumClasses, i/food11.NumClasses), Method: zip.Store, Modified: time.Unix(1_460_000_000, 0)})
			if err != nil {
				return err
			}
			b := buf[:size]
			for j := 0; j+8 <= len(b); j += 8 {
				v := rng.Uint64()
				b[j], b[j+1], b[j+2], b[j+3], b[j+4], b[j+5], b[j+6], b[j+7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			total += int64(size)
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d images, %.2f GiB of image data\n", *out, food11.CanonicalTotal, float64(total)/(1<<30))
	return nil
}

// load runs mltrain's load of a zip into a volume, as `mltrain data food11
// --zip` does, with the digest given (-sha256) so only the load is timed, or
// computed (-sha256 "") to time hash + load.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	zipPath := fs.String("zip", "", "zip to load")
	volume := fs.String("volume", "mltrain-bench-food11", "volume to load into")
	sum := fs.String("sha256", "bench", "digest to record; empty computes it")
	method := fs.String("method", "", "load method: extractor, archive, or empty for mltrain's default")
	cpuprof := fs.String("cpuprofile", "", "write a pprof CPU profile of the load here")
	_ = fs.Parse(args)
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	t0 := time.Now()
	res, err := food11.Load(ctx, eng, food11.LoadOptions{Zip: *zipPath, Volume: *volume, Force: true, Source: food11.Source{SHA256: *sum}, Method: *method})
	if err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("loaded %d images (%.2f GiB) in %.2fs by %s; Go heap sys %.1f MiB; helper peak RSS %.1f MiB\n", res.Manifest.Files, float64(res.Manifest.Bytes)/(1<<30), time.Since(t0).Seconds(), res.Method, float64(ms.Sys)/(1<<20), float64(res.HelperPeakRSS)/(1<<20))
	return nil
}
