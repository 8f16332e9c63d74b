package food11

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// zfile is one entry of a synthetic zip.
type zfile struct {
	name   string
	data   []byte
	method uint16 // zip.Store or zip.Deflate
}

// writeZip writes files as a zip at dir/name and returns its path.
func writeZip(t testing.TB, dir, name string, files []zfile) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, z := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: z.name, Method: z.method, Modified: time.Date(2016, 5, 1, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(z.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// dataset builds image entries: perSplit[split] images spread over the 11
// classes round-robin (real per-class counts are not known, nor needed),
// each with content naming itself so a listing can be checked byte by byte.
func dataset(prefix string, perSplit map[string]int, method uint16) ([]zfile, map[string]string) {
	var files []zfile
	want := map[string]string{} // target path in the volume -> content
	for _, s := range Splits {
		n := perSplit[s]
		for i := 0; i < n; i++ {
			c := i % NumClasses
			name := fmt.Sprintf("%d_%d.jpg", c, i/NumClasses)
			data := fmt.Sprintf("jpeg %s %s", s, name)
			files = append(files, zfile{name: prefix + s + "/" + name, data: []byte(data), method: method})
			want[fmt.Sprintf("%s/%s/class_%02d/%s", Root, s, c, name)] = data
		}
	}
	return files, want
}

func small() map[string]int {
	return map[string]int{"training": 23, "validation": 12, "evaluation": 11}
}
