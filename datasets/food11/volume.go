package food11

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
)

// helper is a created, never started container that mounts the dataset
// volume at /data. The engine's archive API (copy to/from a container) works
// on such a container, so the volume is written and read without running
// anything: no shell, no network, no image from a registry.
type helper struct {
	eng      docker.Engine
	volume   string
	image    string
	extra    map[string]string // extra labels (tests add dockertest.TestLabel)
	id       string
	labelled bool // the volume carries LabelDataset: its content is mltrain's
	vol      docker.Volume
	again    []string // the user's load as command words, for next steps; nil outside a load
}

// rerun is the words that load the volume again: the user's load, or a
// load into this volume.
func (h *helper) rerun(flags ...string) []string {
	return withFlags(againOf(h.again, "--volume", h.volume), flags...)
}

// volumeLabels are the labels a dataset volume is created with. `mltrain down`
// keeps volumes unless --volumes; these labels let it and `status` find it.
func volumeLabels(extra map[string]string) map[string]string {
	l := map[string]string{LabelDataset: "food11", LabelManagedBy: "mltrain"}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// openHelper prepares the volume (created with labels when create is set,
// otherwise it must exist) and a helper container mounting it.
func openHelper(ctx context.Context, eng docker.Engine, volume, image string, extra map[string]string, create bool) (*helper, error) {
	if image == "" {
		image = DefaultHelperImage
	}
	h := &helper{eng: eng, volume: volume, image: image, extra: extra}
	if create {
		if _, err := eng.VolumeEnsure(ctx, volume, volumeLabels(extra)); err != nil {
			return nil, fmt.Errorf("dataset volume %s: %w", volume, err)
		}
	}
	v, err := eng.VolumeInspect(ctx, volume)
	if err != nil {
		if docker.IsNotFound(err) {
			return nil, clierr.WithNext(fmt.Errorf("dataset volume %s does not exist: %w", volume, err), clierr.Step("load it with '%s'", "data", "food11", "--volume", volume))
		}
		return nil, fmt.Errorf("dataset volume %s: %w", volume, err)
	}
	h.labelled, h.vol = v.Labels[LabelDataset] != "", v
	if err := ensureHelperImage(ctx, eng, image, extra); err != nil {
		return nil, err
	}
	if err := h.removeStale(ctx); err != nil {
		return nil, err
	}
	if err := h.create(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// ensureHelperImage imports an image whose only content is an empty /data
// directory. Its CMD is never run; the engine just requires one to create a
// container.
func ensureHelperImage(ctx context.Context, eng docker.Engine, ref string, extra map[string]string) error {
	if _, err := eng.ImageInspect(ctx, ref); err == nil {
		return nil
	} else if !docker.IsNotFound(err) {
		return fmt.Errorf("helper image %s: %w", ref, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "data/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	changes := []string{`CMD ["/mltrain-helper-is-never-started"]`, fmt.Sprintf("LABEL %s=%s", LabelManagedBy, "mltrain")}
	for k, v := range extra {
		changes = append(changes, fmt.Sprintf("LABEL %s=%q", k, v))
	}
	if err := eng.ImageImport(ctx, &buf, ref, changes); err != nil {
		return fmt.Errorf("create the empty helper image %s: %w", ref, err)
	}
	return nil
}

func (h *helper) labels() map[string]string {
	l := map[string]string{LabelRole: roleHelper, LabelHelperVolume: h.volume, LabelManagedBy: "mltrain", LabelHelperOwner: selfOwner()}
	for k, v := range h.extra {
		l[k] = v
	}
	return l
}

// removeStale removes helpers of this volume that an interrupted run left
// behind: they would keep the volume in use. A helper another live mltrain
// process on this host is using (`data food11` loading while `up` reads
// the manifest) is left alone, and one that process removes at the same
// moment is not an error.
func (h *helper) removeStale(ctx context.Context) error {
	cs, err := h.eng.ContainerList(ctx, map[string]string{LabelRole: roleHelper, LabelHelperVolume: h.volume})
	if err != nil {
		return fmt.Errorf("list helper containers of volume %s: %w", h.volume, err)
	}
	for _, c := range cs {
		if ownerAlive(c.Labels[LabelHelperOwner]) {
			continue
		}
		if err := h.eng.ContainerRemove(ctx, c.ID, true); err != nil && !docker.IsNotFound(err) && !docker.IsConflict(err) {
			return fmt.Errorf("remove stale helper container %s: %w", c.Name, err)
		}
	}
	return nil
}

// selfOwner is this process as a helper's owner: <hostname>/<pid>.
func selfOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// ownerAlive reports whether owner (selfOwner of some process) is another
// process that is running on this host. This process's own helpers, those
// of a process gone, of another host (the engine's host may be shared) or
// of an mltrain from before the label are stale.
func ownerAlive(owner string) bool {
	host, pidText, ok := strings.Cut(owner, "/")
	self, _ := os.Hostname()
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || host != self || pid <= 0 || pid == os.Getpid() {
		return false
	}
	// Signal 0 checks that the process exists; EPERM means it does (another
	// user's).
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (h *helper) create(ctx context.Context) error {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("mltrain-%s-helper-%s", h.volume, hex.EncodeToString(rnd[:]))
	id, err := h.eng.ContainerCreate(ctx, docker.ContainerSpec{
		Name: name,
		Config: &container.Config{
			Image:           h.image,
			Cmd:             []string{"/mltrain-helper-is-never-started"},
			Labels:          h.labels(),
			NetworkDisabled: true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "none",
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: h.volume, Target: mountPoint}},
		},
	})
	if err != nil {
		return fmt.Errorf("create helper container for volume %s: %w", h.volume, err)
	}
	h.id = id
	return nil
}

// close removes the helper container, even when ctx was cancelled.
func (h *helper) close() {
	if h == nil || h.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = h.eng.ContainerRemove(ctx, h.id, true)
	h.id = ""
}

// recreate empties the volume by removing and recreating it with its labels.
// The engine API cannot delete files inside a volume without running a
// program in a container, and mltrain has no such program to run; a dataset
// volume mltrain owns holds nothing else, so recreating it is the clean slate.
func (h *helper) recreate(ctx context.Context) error {
	h.close()
	if err := h.eng.VolumeRemove(ctx, h.volume); err != nil {
		if docker.IsConflict(err) {
			return clierr.WithNext(fmt.Errorf("dataset volume %s must be emptied for the new load but is in use by a container: %w", h.volume, err),
				clierr.Next{Text: "stop the containers that mount it ('%s' keeps the volume), then run '%s' again", Commands: [][]string{{"down"}, h.rerun()}})
		}
		return fmt.Errorf("remove dataset volume %s to rebuild it: %w", h.volume, err)
	}
	if _, err := h.eng.VolumeEnsure(ctx, h.volume, volumeLabels(h.extra)); err != nil {
		return fmt.Errorf("recreate dataset volume %s: %w", h.volume, err)
	}
	h.labelled = true
	return h.create(ctx)
}

// exists reports whether path (inside the volume) exists. Only the first
// bytes of the archive are read.
func (h *helper) exists(ctx context.Context, rel string) (bool, error) {
	rc, err := h.eng.CopyFromContainer(ctx, h.id, path.Join(mountPoint, rel))
	if err != nil {
		if docker.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("look for %s in volume %s: %w", rel, h.volume, err)
	}
	rc.Close()
	return true, nil
}

// readManifest returns the volume's manifest, or nil when there is none.
func (h *helper) readManifest(ctx context.Context) (*Manifest, error) {
	rel := path.Join(Root, ManifestName)
	rc, err := h.eng.CopyFromContainer(ctx, h.id, path.Join(mountPoint, rel))
	if err != nil {
		if docker.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s from volume %s: %w", rel, h.volume, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("read %s from volume %s: %w", rel, h.volume, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		var m Manifest
		if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
			return nil, clierr.WithNext(fmt.Errorf("manifest %s in volume %s is unreadable: %w", rel, h.volume, err),
				clierr.Step("rebuild the volume with '%s'", h.rerun("--force")...))
		}
		if m.Counts == nil {
			m.Counts = Counts{}
		}
		return &m, nil
	}
}

// writeManifest puts the manifest into the volume; it is the load's last step.
func (h *helper) writeManifest(ctx context.Context, m Manifest) error {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // the layout string has <split>; keep it readable
	if err := enc.Encode(m); err != nil {
		return err
	}
	b := js.Bytes()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(Root, ManifestName), Mode: 0o644, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return err
	}
	if _, err := tw.Write(b); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := h.eng.CopyToContainer(ctx, h.id, mountPoint, &buf); err != nil {
		return fmt.Errorf("write the manifest into volume %s: %w", h.volume, err)
	}
	return nil
}

var errCopyEnded = errors.New("the engine stopped reading the dataset stream")

// volumeExists reports whether the dataset volume is there, without making it.
func volumeExists(ctx context.Context, eng docker.Engine, volume string) (bool, error) {
	if _, err := eng.VolumeInspect(ctx, volume); err != nil {
		if docker.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("dataset volume %s: %w", volume, err)
	}
	return true, nil
}
