package food11

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/progress"
)

// Options is `mltrain data food11`: where the zip comes from and which volume
// it goes to.
type Options struct {
	URL      string // download from here (DefaultURL when URL and Zip are empty)
	Zip      string // or load this local zip
	SHA256   string // optional pin for either source
	CacheDir string // download cache, e.g. <state>/cache
	Volume   string // DefaultVolume when empty
	Force    bool
	Strict   bool
	Method   string // MethodAuto, MethodExtractor or MethodArchive
	// AllowMissingClasses loads a zip in which a split lacks a whole class
	// (an empty class folder) instead of refusing it.
	AllowMissingClasses bool

	HelperImage string
	Labels      map[string]string
	Client      *http.Client
	Reporter    progress.Reporter
	Lock        LockOptions // who loads, and whether to wait for another load of the volume
}

// Result is what Run did.
type Result struct {
	LoadResult
	Download *Fetched `json:"download,omitempty"` // nil when the source was a local zip or not needed
	Digest   string   `json:"sha256"`             // the source zip's digest
}

// Run makes the volume hold the zip: it reads the volume's manifest first,
// so a volume already loaded from the same URL or digest costs no download.
func Run(ctx context.Context, eng docker.Engine, o Options) (Result, error) {
	if o.Volume == "" {
		o.Volume = DefaultVolume
	}
	if o.Zip != "" && o.URL != "" {
		return Result{}, clierr.Hintf("pass one source", "--zip and --url are mutually exclusive")
	}
	again := o.again() // before the default URL: a hint names only what the user gave
	if o.Zip == "" && o.URL == "" {
		o.URL = DefaultURL
	}
	pin := strings.ToLower(strings.TrimSpace(o.SHA256))
	lo := LoadOptions{Zip: o.Zip, Volume: o.Volume, Force: o.Force, Strict: o.Strict, Method: o.Method, AllowMissingClasses: o.AllowMissingClasses,
		HelperImage: o.HelperImage, Labels: o.Labels, Reporter: o.Reporter, Lock: o.Lock, again: again}
	lk, err := lockVolume(ctx, o.Volume, o.Lock, o.Reporter)
	if err != nil {
		return Result{}, err
	}
	defer lk.Release()
	if o.Zip != "" {
		// A zip that would be refused is refused before the volume is made.
		if err := checkZip(o.Zip, lo); err != nil {
			return Result{}, err
		}
	}
	// An existing volume's manifest decides whether there is anything to
	// do; a missing volume is made only once the zip is known to be good.
	var h *helper
	defer func() { h.close() }() // the helper made below, if any
	var cur *Manifest
	if ok, err := volumeExists(ctx, eng, o.Volume); err != nil {
		return Result{}, err
	} else if ok {
		if h, err = openHelper(ctx, eng, o.Volume, o.HelperImage, o.Labels, false); err != nil {
			return Result{}, err
		}
		h.again = again
		if cur, err = h.readManifest(ctx); err != nil {
			return Result{}, err
		}
	}
	res := Result{}
	res.Volume = o.Volume
	if cur != nil && !o.Force && o.URL != "" && cur.Source.URL == o.URL && (pin == "" || pin == strings.ToLower(cur.Source.SHA256)) {
		res.NoOp, res.Manifest, res.Digest = true, *cur, cur.Source.SHA256
		res.Warnings = CheckCanonical(cur.Counts)
		progress.Note(o.Reporter, fmt.Sprintf("volume %s already holds %s (sha256 %s)", o.Volume, o.URL, short(cur.Source.SHA256)))
		return res, strictErr(o.Strict, o.Volume, res.Warnings, again)
	}

	if o.URL != "" {
		f, err := Fetch(ctx, FetchOptions{URL: o.URL, CacheDir: o.CacheDir, SHA256: pin, Client: o.Client, Reporter: o.Reporter, again: again})
		if err != nil {
			return res, err
		}
		res.Download = &f
		lo.Zip = f.Path
		lo.Source = Source{URL: o.URL, File: filepath.Base(f.Path), SHA256: f.SHA256, Size: f.Size}
	} else {
		d, err := HashFile(ctx, o.Zip, o.Reporter)
		if err != nil {
			return res, err
		}
		if pin != "" && d != pin {
			return res, clierr.WithHint(fmt.Errorf("%s has sha256 %s, but --sha256 pins %s", o.Zip, d, pin), "check the file and the --sha256 value")
		}
		lo.Source = Source{File: filepath.Base(o.Zip), SHA256: d}
	}
	res.Digest = lo.Source.SHA256
	if o.URL != "" {
		if err := checkZip(lo.Zip, lo); err != nil {
			return res, err
		}
	}
	if h == nil {
		if h, err = openHelper(ctx, eng, o.Volume, o.HelperImage, o.Labels, true); err != nil {
			return res, err
		}
	}
	lr, err := load(ctx, h, cur, lo)
	res.LoadResult = lr
	if err == nil {
		for _, w := range res.Warnings {
			progress.Warning(o.Reporter, w)
		}
	}
	return res, err
}
