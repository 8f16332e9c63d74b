package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/internal/images"
	"github.com/mltrain/mltrain/internal/progress"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/render"
	"github.com/mltrain/mltrain/lab/service"
	"github.com/mltrain/mltrain/lab/state"
)

// UpOptions are `mltrain up`'s choices.
type UpOptions struct {
	StateDir state.Dir
	Lab      plan.Options
	Images   images.Options // pull policy, rebuild
	// Timeout bounds the readiness wait (default 10 minutes).
	Timeout time.Duration
	// NoRollback keeps the containers of a failed first up for inspection.
	NoRollback bool
	// StopTimeout is the grace period of containers being replaced.
	StopTimeout time.Duration
	// Data, when set, loads the dataset volume while the images come.
	Data *DataLoad
	// Commands writes the commands notes and hints name: the user's lab and
	// up as they ran it (empty Ran reads as up).
	Commands nextstep.Commands
	// HostIP and NodeIP are the addresses the user gave (recorded with Lab
	// as the lab's choices; Detect already uses them).
	HostIP, NodeIP string
	// LeaseEnd is when the node's lease ends (zero: not known), recorded
	// with the lab's choices.
	LeaseEnd time.Time
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

// Up brings the lab up and proves it ready. A failed first up (no lab
// containers existed before) removes the containers it made unless
// NoRollback; volumes are never removed by a rollback. An interrupted up's
// error hint says what it leaves behind.
func Up(ctx context.Context, d UpDeps, o UpOptions) (Result, error) {
	r := &run{deps: d, dir: o.StateDir, images: o.Images, timeout: o.Timeout, stopTimeout: o.StopTimeout,
		noRollback: o.NoRollback, cmds: o.Commands,
		imageFlags: "give '" + o.Commands.Line("up") + "' images this host already has: " + imageFlags()}
	return r.execute(ctx, upSteps(o))
}

// upSteps are up's: the shared pipeline with the lab's own credentials and
// plan, and, once ready, MinIO's bucket and lab user.
func upSteps(o UpOptions) []step {
	return []step{
		{name: "detect host", run: detectStep},
		{name: "credentials", run: func(ctx context.Context, r *run) (string, error) {
			if err := r.dir.CheckState(); err != nil {
				return "", err
			}
			if err := refuseLostCredentials(ctx, r.deps.Engine, r.dir, o.Lab.Project); err != nil {
				return "", err
			}
			return credentialsStep(ctx, r)
		}},
		{name: "plan", run: func(_ context.Context, r *run) (string, error) {
			p, err := plan.New(r.facts, o.Lab, r.creds)
			if err != nil {
				return "", err
			}
			r.res.URLs = plan.MakeURLs(p)
			r.state = state.State{Project: p.Project, Plan: p, URLs: r.res.URLs, Probes: plan.ProbeAddrs(p),
				Choices: &plan.Choices{Options: o.Lab.WithDefaults(), HostIP: o.HostIP, NodeIP: o.NodeIP, LeaseEnd: o.LeaseEnd}}
			return r.planned(p), nil
		}},
		{name: "render", run: renderStep},
		{name: "workspace", run: workspaceStep},
		{name: "check ports", run: portsStep},
		{name: "images", run: imagesAndDataStep(o.Data)},
		{name: "data volume", run: dataStep},
		{name: "apply", run: applyStep},
		{name: "ready", run: func(ctx context.Context, r *run) (string, error) {
			clients, err := state.NewClients(r.dir, r.plan, r.state.Probes, r.creds)
			if err != nil {
				return "", err
			}
			r.clients = clients
			// Healthy too, not only answering: verify, run next, reads the
			// engine's health.
			return "every service answers and is healthy", r.wait(ctx, ReadyChecks(clients, r.deps.Engine, r.project.Name))
		}},
		{name: "bucket", run: bucketStep},
		{name: "minio lab user", run: func(ctx context.Context, r *run) (string, error) {
			return ensureLabUser(ctx, r.state.Probes, r.creds)
		}},
		{name: "save state", run: saveStep, keep: true},
	}
}

// bucketStep makes the checkpoint bucket and removes any policy of its
// own: MinIO grants anonymous access only through one, and Ray unpickles
// the checkpoints it loads from the bucket, so nobody but the lab's users
// may write there (a lab made before issue 31 let the lab user set one).
func bucketStep(ctx context.Context, r *run) (string, error) {
	made, err := r.clients.Store.EnsureBucket(ctx, store.DefaultBucket)
	r.res.BucketMade = made
	if err != nil {
		return "", err
	}
	removed, err := r.clients.Store.RemoveBucketPolicy(ctx, store.DefaultBucket)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("%q in place", store.DefaultBucket)
	if made {
		msg = fmt.Sprintf("%q created", store.DefaultBucket)
	}
	if removed {
		msg += "; its bucket policy removed (the lab allows no anonymous access)"
	}
	return msg, nil
}

// credentialsStep reads the lab's secrets, generating them on its first up.
func credentialsStep(_ context.Context, r *run) (string, error) {
	creds, created, err := r.dir.CreateCredentials()
	if err != nil {
		return "", err
	}
	r.creds, r.res.Credentials, r.res.CredentialsCreated = creds, creds, created
	// The first up to complete the lab shows its credentials, whether or
	// not it made them (the up that did may have failed before the end).
	var prev state.State
	r.res.FirstReady = r.dir.ReadJSON(state.StateFile, &prev) != nil || prev.UpAt.IsZero()
	if created {
		return "generated in " + r.dir.File(state.CredentialsFile), nil
	}
	return "kept in " + r.dir.File(state.CredentialsFile), nil
}

// workspaceStep writes the students' workspace when it is empty.
func workspaceStep(_ context.Context, r *run) (string, error) {
	dir := render.WorkspaceDir(r.dir, r.plan)
	if r.deps.PopulateWorkspace == nil {
		return dir + " left as it is", nil
	}
	return dir, r.deps.PopulateWorkspace(dir)
}

// ensureLabUser makes MinIO's lab user, limited to the bucket, whose keys
// Jupyter and the Ray nodes hold (the root key stays mltrain's own). It
// says what it did, with no key: progress events end up in CI logs.
func ensureLabUser(ctx context.Context, probes plan.Probes, c plan.Credentials) (string, error) {
	adm, err := store.NewAdmin(store.Config{Endpoint: probes.MinIO, AccessKey: c.MinIOAccessKey, SecretKey: c.MinIOSecretKey})
	if err != nil {
		return "", err
	}
	changed, err := adm.EnsureBucketUser(ctx, store.DefaultBucket, c.MinIOLabAccessKey, c.MinIOLabSecretKey)
	if err != nil {
		return "", err
	}
	// Created, updated or unchanged, in words; no key in the message:
	// progress events end up in CI logs.
	return fmt.Sprintf("%s, bucket %q only", changed, store.DefaultBucket), nil
}

// imageFlags lists the flags that replace a role's image.
func imageFlags() string {
	flags := make([]string, len(service.Roles()))
	for i, r := range service.Roles() {
		flags[i] = "--image-" + string(r) + " REF"
	}
	return strings.Join(flags, ", ")
}
