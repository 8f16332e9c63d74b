package labtest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// CanonicalCounts are the published Food-11 counts spread over the classes.
func CanonicalCounts() food11.Counts {
	c := food11.Counts{}
	for _, s := range food11.Splits {
		var a [food11.NumClasses]int
		left := food11.CanonicalTotals[s]
		for i := range a {
			a[i] = left / (food11.NumClasses - i)
			left -= a[i]
		}
		c[s] = a
	}
	return c
}

// WriteManifest puts a manifest with the published counts (and no images)
// into the dataset volume, as a completed load leaves it.
func WriteManifest(t testing.TB, eng docker.Engine, volume string) {
	t.Helper()
	ctx := context.Background()
	c := CanonicalCounts()
	m := food11.Manifest{Format: food11.ManifestFormat, Dataset: "food11", Layout: food11.Layout, Counts: c, Files: c.Total(),
		Bytes: 1 << 30, Source: food11.Source{File: "Food-11.zip", SHA256: strings.Repeat("ab", 32), Size: 1 << 30}, LoadedAt: time.Now().UTC()}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: food11.Root + "/", Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: food11.Root + "/" + food11.ManifestName, Mode: 0o644, Size: int64(len(b))})
	_, _ = tw.Write(b)
	_ = tw.Close()
	// A created (never started) container mounting the volume receives the copy.
	img := BuildImages(t, eng)["worker"]
	id, err := eng.ContainerCreate(ctx, docker.ContainerSpec{Name: dockertest.UniqueName(t, "mlt-writer"),
		Config:     &container.Config{Image: img, Labels: map[string]string{dockertest.TestLabel: "1"}},
		HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: volume, Target: "/data"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.ContainerRemove(ctx, id, true)
	if err := eng.CopyToContainer(ctx, id, "/data", &buf); err != nil {
		t.Fatal(err)
	}
}
