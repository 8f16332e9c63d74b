package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/labels"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// credentialVolumes are the volume keys whose data was initialised with the
// lab's secrets: MinIO's IAM store (the root key and the lab user) and
// Grafana's database (the admin password is set on its first start only).
var credentialVolumes = []string{render.VolumeMinIO, render.VolumeGrafana}

// refuseLostCredentials stops an up that would mint new secrets over
// volumes made with old ones (the state dir was deleted, the lab's volumes
// were not): MinIO and Grafana would refuse the new secrets, or keep the
// old ones, with no clear cause. The volumes are found by their Compose
// labels, whatever state dir made them.
func refuseLostCredentials(ctx context.Context, eng docker.Engine, dir state.Dir, project string) error {
	path := dir.File(state.CredentialsFile)
	if _, err := os.Lstat(path); !state.IsMissing(err) {
		return nil // present (or unreadable: reading it says so)
	}
	if project == "" {
		project = service.DefaultProject
	}
	vols, err := eng.VolumeList(ctx, map[string]string{labels.Project: project})
	if err != nil {
		return fmt.Errorf("list the volumes of lab %q: %w", project, err)
	}
	var held []string
	for _, v := range vols {
		for _, k := range credentialVolumes {
			if v.Labels[labels.Volume] == k {
				held = append(held, v.Name)
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	return clierr.WithNext(fmt.Errorf("lab %q's volumes %s hold data made with credentials that %s no longer has (the file is missing): new ones would not open them",
		project, strings.Join(held, ", "), path), clierr.Next{
		Text:     "restore " + strings.ReplaceAll(path, "%", "%%") + " from a backup and run '%s' again, or start over with new credentials: '%s' (removes MinIO's checkpoints and Grafana's data), then '%s'",
		Commands: [][]string{{"up"}, {"down", "--volumes"}, {"up"}}})
}
