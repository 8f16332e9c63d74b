package images

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// benchArchive writes a docker-save shaped archive of layers × size bytes.
func benchArchive(b *testing.B, layers int, size int64) string {
	b.Helper()
	file := filepath.Join(b.TempDir(), "bench.tar")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	var names []string
	for i := 0; i < layers; i++ {
		name := fmt.Sprintf("l%d/layer.tar", i)
		names = append(names, name)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size}); err != nil {
			b.Fatal(err)
		}
		for left := size; left > 0; left -= int64(len(chunk)) {
			if _, err := tw.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	cfg := []byte("{}")
	_ = tw.WriteHeader(&tar.Header{Name: "c.json", Mode: 0o644, Size: int64(len(cfg))})
	_, _ = tw.Write(cfg)
	m, _ := json.Marshal([]manifestEntry{{Config: "c.json", RepoTags: []string{"x/y:1"}, Layers: names}})
	_ = tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(m))})
	_, _ = tw.Write(m)
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return file
}

// Load reads an archive twice (check, then the engine). The check's cost
// against a plain sequential read of the same file is the ratio to watch:
// BenchmarkArchiveCheck / BenchmarkArchiveReadBaseline.
func BenchmarkArchiveCheck(b *testing.B) {
	file := benchArchive(b, 4, 16<<20)
	fi, _ := os.Stat(file)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := checkArchive(file); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkArchiveReadBaseline(b *testing.B) {
	file := benchArchive(b, 4, 16<<20)
	fi, _ := os.Stat(file)
	b.SetBytes(fi.Size())
	buf := make([]byte, 1<<20) // the check's read size, so only the work differs
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := f.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}
