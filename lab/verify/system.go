package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/lifecycle"
)

// SystemOptions tune System.
type SystemOptions struct {
	// Project is used when the state file names none.
	Project string
	// HelperLabels go on the dataset helper container (tests mark theirs).
	HelperLabels map[string]string
	// Host reaches the host's GPUs and devices (fixture roots in tests).
	Host host.Options
}

// System returns the real Deps of the lab kept in stateDir: its state and
// credentials, Ray and MinIO clients for its probe addresses, the engine,
// GPU detection on this host, and the exercises' records.
func System(eng docker.Engine, stateDir string, o SystemOptions) (Deps, error) {
	st, err := lifecycle.LoadState(stateDir)
	if err != nil {
		return Deps{}, err
	}
	if st.Project == "" {
		st.Project = o.Project
	}
	credsPath := filepath.Join(stateDir, lab.CredentialsFile)
	// Verify must not generate credentials: new ones would not be the lab's.
	if _, err := os.Stat(credsPath); errors.Is(err, fs.ErrNotExist) {
		return Deps{}, clierr.Hintf("run 'mltrain up' (or pass the --state-dir of the lab)", "the lab's credentials file %s is missing", credsPath)
	}
	creds, err := lab.LoadOrCreateCredentials(stateDir)
	if err != nil {
		return Deps{}, err
	}
	rc, err := ray.New(ray.Options{Address: st.Probes.Ray, Token: creds.RayAuthToken, TokenSource: credsPath})
	if err != nil {
		return Deps{}, err
	}
	hostDeps := doctor.System(nil, o.Host)
	return Deps{
		State: st, Creds: creds, StateDir: stateDir, Engine: eng, Ray: rc,
		HTTP: &http.Client{Timeout: 15 * time.Second},
		MinIO: func(access, secret string) (Store, error) {
			c, err := store.New(store.Config{Endpoint: st.Probes.MinIO, AccessKey: access, SecretKey: secret})
			if err != nil {
				return nil, fmt.Errorf("MinIO client: %w", err)
			}
			return c, nil
		},
		DetectGPUs: func(ctx context.Context) (gpu.Report, error) { return hostDeps.DetectGPUs(ctx) },
		Access:     hostDeps.Access,
		Manifest: func(ctx context.Context, volume string) (*food11.Manifest, error) {
			return food11.ReadManifest(ctx, eng, food11.VerifyOptions{Volume: volume, Labels: o.HelperLabels})
		},
		DataVerify: func(ctx context.Context, volume string) (food11.Report, error) {
			return food11.Verify(ctx, eng, food11.VerifyOptions{Volume: volume, Labels: o.HelperLabels})
		},
		Records: func() (map[string]exercise.Record, error) { return exercise.LoadRecords(stateDir) },
	}, nil
}
