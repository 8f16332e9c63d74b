// Package food11 prepares the Food-11 dataset volume the lab's workers mount:
// download (resumable, checksummed), load the zip into a Docker volume as the
// course's layout (Food-11/<split>/class_<cc>/<c>_<n>.jpg), and verify what
// the volume holds. The load runs this same binary as an extractor in a
// helper container that mounts the volume and, read-only, the zip (extract.go);
// where the engine cannot run it (not on this host), it streams a tar
// through the engine's archive API instead (load.go).
//
// The volume never carries the manifest (Food-11/.mltrain-manifest.json)
// unless the load it describes completed: the manifest is written in its own
// copy after the data was written, so "has a manifest" means "complete".
//
// Why no staging folder renamed into place: the engine API has no rename,
// and the helper containers run no shell (no image from a registry), so a
// move would mean copying the tree out and back in, twice the I/O. Instead
// the load writes Food-11 directly, manifest last; a Food-11 without a
// manifest is "not loaded"; a re-run finds it and empties the volume by
// removing and recreating it (mltrain's dataset volumes hold only the
// dataset; a volume mltrain did not create needs --force) before loading
// again. The engine refuses to remove a volume a container mounts, so a
// rebuild never pulls the data from under a running worker. A complete
// dataset is emptied only for a zip known to be whole: its layout and
// classes are checked from the central directory, and every image is read
// and its CRC-32 checked, before the volume is touched (check.go).
package food11

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/labels"
)

const (
	// NumClasses is the number of Food-11 classes, ids 0..10.
	NumClasses = 11
	// DefaultURL is the course's mirror of the Food-11 zip.
	DefaultURL = "https://nyu.box.com/shared/static/m5kvcl25hfpljul3elhu6xz8y2w61op4.zip"
	// DefaultVolume is the volume name the course's compose files expect.
	DefaultVolume = "food11"
	// Root is the dataset's directory inside the volume; workers mount the
	// volume at /mnt, so FOOD11_DATA_DIR=/mnt/Food-11.
	Root = "Food-11"
	// ManifestName is the manifest's file name inside Root.
	ManifestName = ".mltrain-manifest.json"
	// DefaultHelperImage is the registry-free empty image the helper container
	// is created from (imported through the API, never pulled).
	DefaultHelperImage = "mltrain/empty:1"

	// LabelDataset marks volumes mltrain created for a dataset; their whole
	// content is mltrain's, so a rebuild may recreate them.
	LabelDataset   = labels.Dataset
	LabelManagedBy = labels.ManagedBy
	// LabelRole and LabelHelperVolume mark helper containers, so a run can
	// remove helpers an interrupted run left behind.
	LabelRole         = labels.Role
	LabelHelperVolume = labels.HelperVolume
	// LabelHelperOwner names the process using a helper: one another live
	// mltrain process uses (a load beside `up`) is not stale.
	LabelHelperOwner = labels.HelperOwner
	roleHelper       = "dataset-helper"

	// ManifestFormat is the manifest schema version.
	ManifestFormat = 1
	// mountPoint is where the helper container mounts the volume.
	mountPoint = "/data"
)

// Splits are the three Food-11 splits, in the course's order.
var Splits = []string{"training", "validation", "evaluation"}

// CanonicalTotals are the confirmed image counts of the published Food-11
// per split (9,866 / 3,430 / 3,347). Per-class-per-split counts are not
// confirmed anywhere, so only these totals and the class count are checked.
var CanonicalTotals = map[string]int{"training": 9866, "validation": 3430, "evaluation": 3347}

// CanonicalTotal is the published number of images, 16,643.
const CanonicalTotal = 16643

// Counts holds image counts per split and class.
type Counts map[string][NumClasses]int

// Add counts one image.
func (c Counts) Add(split string, class int) {
	a := c[split]
	a[class]++
	c[split] = a
}

// Split is the number of images in split.
func (c Counts) Split(split string) int {
	n := 0
	for _, v := range c[split] {
		n += v
	}
	return n
}

// Total is the number of images in every split.
func (c Counts) Total() int {
	n := 0
	for s := range c {
		n += c.Split(s)
	}
	return n
}

// Equal reports whether c and o hold the same counts (missing splits count as zero).
func (c Counts) Equal(o Counts) bool {
	for _, s := range unionKeys(c, o) {
		if c[s] != o[s] {
			return false
		}
	}
	return true
}

// Diff names the first differences between c (found) and want, for messages.
func (c Counts) Diff(want Counts) []string {
	var out []string
	for _, s := range unionKeys(c, want) {
		for i := 0; i < NumClasses; i++ {
			if c[s][i] != want[s][i] {
				out = append(out, fmt.Sprintf("%s/class_%02d: %d, manifest says %d", s, i, c[s][i], want[s][i]))
			}
		}
	}
	return out
}

func unionKeys(a, b Counts) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []Counts{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Source says where the loaded zip came from.
type Source struct {
	URL    string `json:"url,omitempty"`  // the download URL, when downloaded
	File   string `json:"file,omitempty"` // the zip's base name
	SHA256 string `json:"sha256"`         // hex digest of the zip
	Size   int64  `json:"size"`           // bytes of the zip
}

// Manifest is Food-11/.mltrain-manifest.json: what a completed load put in
// the volume. It is written last, so its presence means the load completed.
type Manifest struct {
	Format   int       `json:"format"`
	Dataset  string    `json:"dataset"` // "food11"
	Layout   string    `json:"layout"`  // how files are placed
	Source   Source    `json:"source"`
	Counts   Counts    `json:"counts"` // split -> images per class 0..10
	Files    int       `json:"files"`  // images in total
	Bytes    int64     `json:"bytes"`  // bytes of images in total
	LoadedAt time.Time `json:"loaded_at"`
}

// Layout is the manifest's layout string: the course's, so its code reads
// the volume unchanged (torchvision ImageFolder per split).
const Layout = "Food-11/<split>/class_<cc>/<c>_<n>.jpg"

// CheckCanonical compares counts with the published Food-11 and returns one
// message per difference, naming the split. It also names empty class
// folders, because ImageFolder refuses a class without images.
func CheckCanonical(c Counts) []string {
	var out []string
	for _, s := range Splits {
		if got, want := c.Split(s), CanonicalTotals[s]; got != want {
			out = append(out, fmt.Sprintf("%s has %s images; canonical Food-11 has %s", s, commas(got), commas(want)))
		}
		for i := 0; i < NumClasses; i++ {
			if c[s][i] == 0 {
				out = append(out, fmt.Sprintf("%s/class_%02d is empty; all %d classes are expected in every split", s, i, NumClasses))
			}
		}
	}
	for s := range c {
		if _, ok := CanonicalTotals[s]; !ok {
			out = append(out, fmt.Sprintf("unexpected split %q", s))
		}
	}
	return out
}

func commas(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
