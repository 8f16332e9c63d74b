package food11

import (
	"archive/zip"
	"fmt"
	"github.com/mltrain/mltrain/internal/progress"
)

// maxDeflateRatio bounds what deflate can expand to: a stored block of
// 258-byte matches codes at most about 1032 bytes out per byte in (RFC 1951's
// longest match in its shortest code); more is a lying header.
const maxDeflateRatio = 1032

// NotZipError is a file whose central directory cannot be true of it: an
// entry that claims more bytes than the file holds, or sizes its method
// cannot produce. Such a file is "not a valid zip", never a disk problem.
type NotZipError struct {
	Zip, Entry, Why string
}

func (e *NotZipError) Error() string {
	return fmt.Sprintf("%s is not a valid zip: entry %q %s", e.Zip, e.Entry, e.Why)
}

func (e *NotZipError) Unwrap() error { return zip.ErrFormat }

// checkSizes holds every entry's sizes against the archive's real size
// before anything is extracted.
func checkSizes(zr *zip.Reader, size int64, what string) error {
	for _, f := range zr.File {
		if f.Mode().IsDir() {
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			return &NotZipError{Zip: what, Entry: f.Name, Why: fmt.Sprintf("has no readable local header (%v)", err)}
		}
		c, u := f.CompressedSize64, f.UncompressedSize64
		switch {
		case off < 0 || c > uint64(size) || uint64(off)+c > uint64(size):
			return &NotZipError{Zip: what, Entry: f.Name, Why: fmt.Sprintf("claims %s of data at offset %d, past the end of the %s file", progress.Bytes(int64(min(c, 1<<62))), off, progress.Bytes(size))}
		case f.Method == zip.Store && c != u:
			return &NotZipError{Zip: what, Entry: f.Name, Why: fmt.Sprintf("is stored uncompressed but claims %d bytes from %d", u, c)}
		case f.Method == zip.Deflate && u > c*maxDeflateRatio+1024:
			return &NotZipError{Zip: what, Entry: f.Name, Why: fmt.Sprintf("claims %s from %s of deflate data, more than deflate can expand to", progress.Bytes(int64(min(u, 1<<62))), progress.Bytes(int64(c)))}
		}
	}
	return nil
}
