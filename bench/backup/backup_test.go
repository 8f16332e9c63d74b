// Package backup measures `mltrain backup` to a file against `tar -czf` of
// the same bytes from a local copy, side by side in one run: a bucket of
// Lightning-sized checkpoints (default ~2 GiB) in a real MinIO, plus a
// workspace.
//
//	make bench-backup   (MLTRAIN_BENCH_BACKUP=1 go test -run '^$' -bench Backup -benchtime 3x ./bench/backup)
//
// MLTRAIN_BENCH_BACKUP_MB sets the bucket's size in MiB (a quick run: 256).
package backup

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/mltrain/mltrain/lab/backup"
	"github.com/mltrain/mltrain/lab/labtest"
	"github.com/mltrain/mltrain/lab/state"
)

// checkpointMiB is one checkpoint file's size: a Lightning checkpoint of
// the lab's MobileNetV2 (weights, optimizer state) is tens of MiB.
const checkpointMiB = 48

func BenchmarkBackupFile(b *testing.B) {
	if os.Getenv("MLTRAIN_BENCH_BACKUP") == "" {
		b.Skip("set MLTRAIN_BENCH_BACKUP=1 (make bench-backup) to run: it writes ~2 GiB")
	}
	mib := 2048
	if s := os.Getenv("MLTRAIN_BENCH_BACKUP_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("MLTRAIN_BENCH_BACKUP_MB=%q: want a size in MiB", s)
		}
		mib = v
	}
	ctx := context.Background()
	s := labtest.StartMinIO(b)
	dir := b.TempDir()
	local := filepath.Join(dir, "local") // the same bytes as plain files, for tar
	l, err := backup.NewLab(s.URL, s.RootUser, s.RootPassword, filepath.Join(local, "workspace"), state.Dir(filepath.Join(dir, "state")))
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Store.MakeBucket(ctx, l.Bucket, minio.MakeBucketOptions{}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i*checkpointMiB < mib; i++ {
		size := min(checkpointMiB, mib-i*checkpointMiB) << 20
		key := fmt.Sprintf("food11-ray/checkpoint_2026-11-29_05-%02d-00.000000/checkpoint.ckpt", i)
		put(b, l, local, key, weights(rng, size))
		put(b, l, local, fmt.Sprintf("food11-ray/checkpoint_2026-11-29_05-%02d-00.000000/metrics.json", i), []byte(fmt.Sprintf(`{"epoch": %d, "val_loss": 0.%d}`, i, 900-i)))
	}
	for i := range 20 {
		writeFile(b, filepath.Join(local, "workspace", fmt.Sprintf("notebook-%02d.ipynb", i)), bytes.Repeat([]byte(`{"cell_type": "code", "source": ["print(1)"]},`), 2000))
	}

	var ratios []float64
	for i := 0; b.Loop(); i++ {
		dest := filepath.Join(dir, fmt.Sprintf("mltrain-%d.tar.gz", i))
		t0 := time.Now()
		if _, err := backup.Backup(ctx, l, backup.Target{File: dest}, backup.Options{}); err != nil {
			b.Fatal(err)
		}
		ours := time.Since(t0)
		tarball := filepath.Join(dir, fmt.Sprintf("tar-%d.tar.gz", i))
		t0 = time.Now()
		if out, err := exec.Command("tar", "-czf", tarball, "-C", local, ".").CombinedOutput(); err != nil {
			b.Fatalf("tar -czf: %v\n%s", err, out)
		}
		theirs := time.Since(t0)
		ratios = append(ratios, ours.Seconds()/theirs.Seconds())
		b.Logf("round %d: mltrain %s (%d MiB written), tar -czf %s (%d MiB)", i+1, ours.Round(time.Millisecond), size(dest)>>20,
			theirs.Round(time.Millisecond), size(tarball)>>20)
		os.Remove(dest)
		os.Remove(tarball)
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	b.ReportMetric(med, "mltrain/tar")
	fmt.Printf("backup to a file (%d MiB): mltrain / tar -czf: %.2f (median of %d)\n", mib, med, len(ratios))
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

// weights is n bytes of float32s as a trained model's are: small values of
// random mantissa, which gzip hardly compresses.
func weights(rng *rand.Rand, n int) []byte {
	out := make([]byte, n)
	for i := 0; i+4 <= n; i += 4 {
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(float32(rng.NormFloat64()*0.05)))
	}
	return out
}

func put(b *testing.B, l backup.Lab, local, key string, data []byte) {
	b.Helper()
	if _, err := l.Store.PutObject(context.Background(), l.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(local, "bucket", l.Bucket, key), data)
}

func writeFile(b *testing.B, p string, data []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
}
