package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

// dataFlags are up's way to load the dataset while the images come: off
// unless asked, because up must not need the dataset's mirror (a rehearsal,
// a node whose images were preloaded offline, a second host that loads its
// own copy later), and 'mltrain data food11' stays the way to load alone.
type dataFlags struct {
	name, url, zip, sha string
}

func addDataFlags(fl *pflag.FlagSet) *dataFlags {
	d := &dataFlags{}
	fl.StringVar(&d.name, "data", "", "also load this dataset (food11) into the lab's volume while the images are pulled and built")
	fl.StringVar(&d.url, "data-url", "", "with --data: download the zip from this URL (default: the course's mirror)")
	fl.StringVar(&d.zip, "data-zip", "", "with --data: load this local zip instead of downloading")
	fl.StringVar(&d.sha, "data-sha256", "", "with --data: expected SHA-256 of the zip")
	return d
}

// load is the dataset load up was asked for, or nil.
func (d *dataFlags) load(cmd *cobra.Command) (*lifecycle.DataLoad, error) {
	if d.name == "" {
		if d.url != "" || d.zip != "" || d.sha != "" {
			return nil, clierr.Usage(fmt.Errorf("--data-url, --data-zip and --data-sha256 need --data food11"), cmd.CommandPath())
		}
		return nil, nil
	}
	if d.name != "food11" {
		return nil, clierr.Usage(fmt.Errorf("--data %q: the lab's dataset is food11", d.name), cmd.CommandPath())
	}
	if d.url != "" && d.zip != "" {
		return nil, clierr.Usage(fmt.Errorf("--data-url and --data-zip are mutually exclusive"), cmd.CommandPath())
	}
	return &lifecycle.DataLoad{URL: d.url, Zip: d.zip, SHA256: d.sha}, nil
}
