package food11

import (
	"errors"
	"fmt"
	"github.com/mltrain/mltrain/internal/progress"
	"sort"
	"strings"
	"syscall"
)

// RerunError is a failed load whose fix is to do something, then run the
// same command again. The command layer, which knows the command line and
// every flag the user gave, writes the re-run; this package says only what
// to do first.
type RerunError struct {
	Err   error
	Do    string // what to do first, in words; "" when running again is the fix
	Force bool   // the re-run needs --force
}

func (e *RerunError) Error() string { return e.Err.Error() }
func (e *RerunError) Unwrap() error { return e.Err }

// NoSpaceError is a load that did not fit: it names the filesystem that is
// full, the volume's own (its driver's options, its mountpoint on the
// engine's host), not Docker's root.
type NoSpaceError struct {
	Volume     string
	Mountpoint string // on the engine's host
	Driver     string
	Options    map[string]string
	Need       int64 // bytes the images take; 0 when unknown
	Free, Size int64 // the filesystem as the extractor saw it; 0 when unknown
	Cleaned    bool  // the partial files were removed
	Entry      string
}

func (e *NoSpaceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dataset volume %s is out of space", e.Volume)
	if e.Entry != "" {
		fmt.Fprintf(&b, " (writing %s)", e.Entry)
	}
	if e.Need > 0 {
		fmt.Fprintf(&b, ": the images need %s", progress.Bytes(e.Need))
	}
	if e.Size > 0 {
		fmt.Fprintf(&b, ", its filesystem has %s free of %s", progress.Bytes(e.Free), progress.Bytes(e.Size))
	}
	fmt.Fprintf(&b, " (%s)", e.Filesystem())
	if e.Cleaned {
		b.WriteString("; the partial files were removed")
	}
	return b.String()
}

func (e *NoSpaceError) Unwrap() error { return syscall.ENOSPC }

// Filesystem names where the volume's files live: its driver, the driver's
// options (a local volume on another device says which) and its mountpoint.
func (e *NoSpaceError) Filesystem() string {
	d := e.Driver
	if d == "" {
		d = "local"
	}
	parts := []string{"driver " + d}
	keys := make([]string, 0, len(e.Options))
	for k := range e.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+e.Options[k])
	}
	if e.Mountpoint != "" {
		parts = append(parts, "mounted at "+e.Mountpoint+" on the engine's host")
	}
	return strings.Join(parts, ", ")
}

// nameFilesystem fills a NoSpaceError in err with the volume's own
// filesystem, which only the engine's view of the volume knows.
func (h *helper) nameFilesystem(err error) {
	var ns *NoSpaceError
	if errors.As(err, &ns) {
		ns.Mountpoint, ns.Driver, ns.Options = h.vol.Mountpoint, h.vol.Driver, h.vol.Options
	}
}
