package state

import (
	"fmt"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/plan"
)

// Clients reach a running lab from this host: the one place that turns a
// state dir (or, during up, a plan and its credentials) into Ray, MinIO and
// probe clients, for status, the exercises, verify and the readiness wait.
type Clients struct {
	Dir    Dir
	Plan   plan.Plan
	Probes plan.Probes
	Creds  plan.Credentials
	Ray    *ray.Client
	// Store is MinIO as its root user: mltrain's own access (bucket
	// creation, checking checkpoints), never handed to a container.
	Store *store.Client
}

// Connect builds the clients of the lab kept in d from its state.json and
// credentials.json; neither is ever created here.
func (d Dir) Connect() (Clients, error) {
	st, err := d.State()
	if err != nil {
		return Clients{}, err
	}
	if st.Plan.Joined != nil {
		return d.connectJoined(st)
	}
	creds, err := d.Credentials()
	if err != nil {
		return Clients{}, err
	}
	return NewClients(d, st.Plan, st.Probes, creds)
}

// connectJoined reaches, from a second host, the lab its workers joined: the
// head with the bundle's token, MinIO as the bundle's bucket-limited user
// (this host never holds MinIO's root).
func (d Dir) connectJoined(st State) (Clients, error) {
	var b plan.JoinBundle
	if err := d.ReadJSON(JoinFile, &b); err != nil {
		return Clients{}, clierr.WithHint(fmt.Errorf("this host joined lab %q, but its join bundle: %w", st.Plan.Joined.Lab, err),
			"run the 'mltrain join ...' line from 'mltrain join-token' on the lab's first host again")
	}
	rc, err := ray.New(ray.Options{Address: b.DashboardURL(), Token: b.RayToken, TokenSource: d.File(JoinFile)})
	if err != nil {
		return Clients{}, err
	}
	sc, err := store.New(store.Config{Endpoint: b.MinIO, AccessKey: b.S3Access, SecretKey: b.S3Secret})
	if err != nil {
		return Clients{}, err
	}
	creds := plan.Credentials{RayAuthToken: b.RayToken, MinIOLabAccessKey: b.S3Access, MinIOLabSecretKey: b.S3Secret}
	return Clients{Dir: d, Plan: st.Plan, Probes: st.Probes, Creds: creds, Ray: rc, Store: sc}, nil
}

func NewClients(d Dir, p plan.Plan, probes plan.Probes, creds plan.Credentials) (Clients, error) {
	rc, err := ray.New(ray.Options{Address: probes.Ray, Token: creds.RayAuthToken, TokenSource: d.File(CredentialsFile)})
	if err != nil {
		return Clients{}, err
	}
	sc, err := store.New(store.Config{Endpoint: probes.MinIO, AccessKey: creds.MinIOAccessKey, SecretKey: creds.MinIOSecretKey})
	if err != nil {
		return Clients{}, err
	}
	return Clients{Dir: d, Plan: p, Probes: probes, Creds: creds, Ray: rc, Store: sc}, nil
}
