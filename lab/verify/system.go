package verify

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mltrain/mltrain/datasets/food11"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/doctor"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/exercise"
	"github.com/mltrain/mltrain/lab/state"
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
func System(eng docker.Engine, stateDir state.Dir, o SystemOptions) (Deps, error) {
	// Connect never generates credentials: new ones would not be the lab's.
	c, err := stateDir.Connect()
	if err != nil {
		return Deps{}, err
	}
	st, err := stateDir.State()
	if err != nil {
		return Deps{}, err
	}
	if st.Project == "" {
		st.Project = o.Project
	}
	hostDeps := doctor.System(nil, o.Host)
	return Deps{
		State: st, Creds: c.Creds, StateDir: stateDir, Engine: eng, Ray: c.Ray,
		HTTP: &http.Client{Timeout: 15 * time.Second},
		MinIO: func(access, secret string) (Store, error) {
			s, err := store.New(store.Config{Endpoint: c.Probes.MinIO, AccessKey: access, SecretKey: secret})
			if err != nil {
				return nil, fmt.Errorf("MinIO client: %w", err)
			}
			return s, nil
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
