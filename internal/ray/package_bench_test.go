package ray_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mltrain/mltrain/internal/ray"
)

// benchTree is a workspace-sized tree: 200 files of 16 KiB in 10 folders,
// plus a .gitignore and an ignored folder.
func benchTree(b *testing.B) string {
	dir := b.TempDir()
	data := bytes.Repeat([]byte("x"), 16<<10)
	for i := 0; i < 200; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%d", i%10), fmt.Sprintf("f%d.py", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.ckpt\nlogs/\n"), 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "logs", "x.log"), data, 0o644)
	return dir
}

// BenchmarkPackageDir: hashing + ignore matching + zip, the real thing.
func BenchmarkPackageDir(b *testing.B) {
	dir := benchTree(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ray.PackageDir(dir, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkZipOnlyBaseline: the same files stored in a zip with a plain
// walk, no hashing or ignore rules; the floor PackageDir is compared with.
func BenchmarkZipOnlyBaseline(b *testing.B) {
	dir := benchTree(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			w, err := zw.CreateHeader(&zip.FileHeader{Name: rel, Method: zip.Store})
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(w, f)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = zw.Close()
	}
}
