package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/compose"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/ready"
)

// UpOptions are `mltrain up`'s choices.
type UpOptions struct {
	StateDir StateDir
	Lab      Options
	Images   images.Options // pull policy, rebuild
	// Timeout bounds the readiness wait (default 10 minutes).
	Timeout time.Duration
	// NoRollback keeps the containers of a failed first up for inspection.
	NoRollback bool
	// StopTimeout is the grace period of containers being replaced.
	StopTimeout time.Duration
}

// UpDeps are Up's ways to reach the world; tests replace Detect.
type UpDeps struct {
	Engine   docker.Engine
	Reporter progress.Reporter
	// Detect returns the host's facts (GPUs, CPUs, memory, address).
	Detect func(ctx context.Context) (host.Facts, error)
	// PopulateWorkspace writes the students' workspace into dir when it is
	// empty (nil: leave it as it is).
	PopulateWorkspace func(dir string) error
}

// UpResult is what `mltrain up` prints.
type UpResult struct {
	Plan        Plan           `json:"plan"`
	Apply       compose.Result `json:"apply"`
	Images      images.Result  `json:"images"`
	URLs        URLs           `json:"urls"`
	Credentials Credentials    `json:"-"`
	// CredentialsCreated: this up generated the lab's secrets (the only
	// time they are printed unasked).
	CredentialsCreated bool     `json:"credentials_created"`
	BucketMade         bool     `json:"bucket_created"`
	StateDir           StateDir `json:"state_dir"`
}

// Up brings the lab up and proves it ready. A failed first up (no lab
// containers existed before) removes the containers it made unless
// NoRollback; volumes are never removed by a rollback. An interrupted up's
// error hint says what it leaves behind.
func Up(ctx context.Context, d UpDeps, o UpOptions) (UpResult, error) {
	var left leftBehind
	res, err := up(ctx, d, o, &left)
	if err != nil && ctx.Err() != nil {
		err = clierr.WithHint(err, left.String())
	}
	return res, err
}

// leftBehind is what an up stopped part way has left in place.
type leftBehind struct {
	applying   bool // containers were being created or started
	rolledBack bool // ... and this first up's were removed again
}

func (l leftBehind) String() string {
	switch {
	case l.rolledBack:
		return "rolled back: this first up's containers were removed; its volumes and the state dir's credentials and compose.yaml are kept"
	case l.applying:
		return "the lab's containers are kept as they were left, some perhaps not ready"
	}
	return "no container was started; the state dir's credentials and compose.yaml are kept"
}

func up(ctx context.Context, d UpDeps, o UpOptions, left *leftBehind) (UpResult, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	var res UpResult
	res.StateDir = o.StateDir
	rep := d.Reporter

	progress.Begin(rep, "detect host", "")
	facts, err := d.Detect(ctx)
	if err != nil {
		progress.Failed(rep, "detect host", err)
		return res, err
	}
	progress.End(rep, "detect host", fmt.Sprintf("%d GPU(s), %d CPUs, %s", len(facts.GPUs.GPUs), facts.CPUs, progress.Bytes(facts.MemoryBytes)))

	creds, created, err := o.StateDir.CreateCredentials()
	if err != nil {
		return res, err
	}
	res.Credentials, res.CredentialsCreated = creds, created
	plan, err := NewPlan(facts, o.Lab, creds)
	if err != nil {
		return res, err
	}
	res.Plan = plan
	for _, w := range plan.Warnings {
		progress.Warning(rep, w)
	}

	rendered, err := Render(ctx, o.StateDir, plan)
	if err != nil {
		return res, err
	}
	project := rendered.Project
	if d.PopulateWorkspace != nil {
		if err := d.PopulateWorkspace(WorkspaceDir(o.StateDir, plan)); err != nil {
			return res, err
		}
	}
	if err := checkPortsFree(ctx, d.Engine, project, plan.Ports); err != nil {
		return res, err
	}
	if err := checkHostPortsFree(ctx, d.Engine, project.Name, plan, hostNetworked(project.Services[HeadService].NetworkMode)); err != nil {
		return res, err
	}
	imgRes, err := ensureImages(ctx, d.Engine, project, plan.RayVersion, o.Images, rep, "give 'mltrain up' images this host already has: "+imageFlags())
	res.Images = imgRes
	if err != nil {
		return res, err
	}
	// After the images: a host that cannot have them is left without a
	// volume it did not ask for.
	if _, err := ensureDataVolume(ctx, d.Engine, plan, rep); err != nil {
		return res, err
	}

	ap, err := newApplier(ctx, d.Engine, project, rep, o.NoRollback, "mltrain up", left)
	if err != nil {
		return res, err
	}
	fail := func(err error) (UpResult, error) { return res, ap.fail(ctx, err) }
	if res.Apply, err = ap.apply(ctx, o.StopTimeout, o.Timeout); err != nil {
		return res, err
	}

	res.URLs = MakeURLs(plan)
	probes := probeAddrs(plan)
	clients, err := newClients(o.StateDir, plan, probes, creds)
	if err != nil {
		return fail(err)
	}
	if err := ready.Wait(ctx, d.Engine, project.Name, clients.ReadyChecks(), o.Timeout, rep); err != nil {
		return fail(err)
	}

	made, err := clients.Store.EnsureBucket(ctx, store.DefaultBucket)
	if err != nil {
		return fail(err)
	}
	res.BucketMade = made
	if err := ensureLabUser(ctx, probes, creds, rep); err != nil {
		return fail(err)
	}
	if err := o.StateDir.SaveState(State{Project: plan.Project, Plan: plan, URLs: res.URLs, Probes: probes, UpAt: time.Now().UTC()}); err != nil {
		return res, err
	}
	return res, nil
}

// ensureLabUser makes MinIO's lab user, limited to the bucket, whose keys
// Jupyter and the Ray nodes hold (the root key stays mltrain's own).
func ensureLabUser(ctx context.Context, probes Probes, c Credentials, rep progress.Reporter) error {
	const step = "minio lab user"
	progress.Begin(rep, step, "")
	adm, err := store.NewAdmin(store.Config{Endpoint: probes.MinIO, AccessKey: c.MinIOAccessKey, SecretKey: c.MinIOSecretKey})
	var change store.UserChange
	if err == nil {
		change, err = adm.EnsureBucketUser(ctx, store.DefaultBucket, c.MinIOLabAccessKey, c.MinIOLabSecretKey)
	}
	if err != nil {
		progress.Failed(rep, step, err)
		return err
	}
	// Created, updated or unchanged, in words; no key in the message:
	// progress events end up in CI logs.
	progress.End(rep, step, fmt.Sprintf("%s, bucket %q only", change, store.DefaultBucket))
	return nil
}

// imageFlags lists the flags that replace a role's image.
func imageFlags() string {
	flags := make([]string, len(Roles))
	for i, r := range Roles {
		flags[i] = "--image-" + string(r) + " REF"
	}
	return strings.Join(flags, ", ")
}
