package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/service"
)

func minioSpecs() []spec {
	return []spec{
		{id: "minio.bucket", group: GroupMinIO, title: "MinIO has the bucket 'ray' for checkpoints", run: checkBucket},
		{id: "minio.credentials", group: GroupMinIO, title: "MinIO does not use the course's default credentials", run: checkMinIOCreds},
		{id: "minio.lab-user", group: GroupMinIO, title: "Jupyter and Ray use MinIO's lab user, limited to the bucket 'ray'", run: checkLabUser},
		{id: "minio.private", group: GroupMinIO, title: "The bucket 'ray' has no bucket policy and refuses anonymous requests", run: checkPrivate},
	}
}

// DefaultCredentials are the pairs a course or MinIO itself ships with;
// a lab accepting any of them is open to anyone on the network.
var DefaultCredentials = [][2]string{
	{"your-access-key", "your-secret-key"},
	{"minioadmin", "minioadmin"},
}

// probePrefix lists nothing in a real bucket: the listing only proves the
// bucket exists and the credentials are accepted, whatever the bucket holds.
const probePrefix = ".mltrain-verify-probe/"

func s3Code(err error) string {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code
	}
	return ""
}

// reachable fails fast when MinIO does not answer at all: the S3 client
// would retry with backoff until the check's time is up. Any HTTP answer
// (even an S3 error) means it is up.
func (e *env) minioReachable(ctx context.Context) *outcome {
	u := strings.TrimRight(e.d.State.Probes.MinIO, "/") + "/minio/health/live"
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	if _, _, err := e.get(ctx, u, nil); err != nil {
		o := failErr(fmt.Errorf("MinIO does not answer: %w", err), e.cmd("status")+"; "+e.cmd("logs", "minio"))
		return &o
	}
	return nil
}

func checkBucket(ctx context.Context, e *env) outcome {
	if e.d.MinIO == nil {
		return fail("report this as an mltrain bug", "no MinIO client configured")
	}
	if o := e.minioReachable(ctx); o != nil {
		return *o
	}
	s, err := e.d.MinIO(e.d.Creds.MinIOAccessKey, e.d.Creds.MinIOSecretKey)
	if err != nil {
		return failErr(err, e.cmd("up"))
	}
	_, err = s.ListCheckpoints(ctx, store.DefaultBucket, probePrefix)
	switch {
	case err == nil:
		return pass("bucket %q exists on %s (listed with the lab's credentials)", store.DefaultBucket, e.d.State.Probes.MinIO)
	case s3Code(err) == "NoSuchBucket":
		return fail(e.cmd("up")+" (it creates the bucket)", "MinIO at %s has no bucket %q: Ray Train cannot store checkpoints", e.d.State.Probes.MinIO, store.DefaultBucket)
	}
	return failErr(err, e.cmd("status"))
}

func isDefault(user, pass string) bool {
	for _, d := range DefaultCredentials {
		if user == d[0] || pass == d[1] {
			return true
		}
	}
	return false
}

func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func checkMinIOCreds(ctx context.Context, e *env) outcome {
	if e.d.MinIO == nil {
		return fail("report this as an mltrain bug", "no MinIO client configured")
	}
	fix := "remove MINIO_ROOT_USER/MINIO_ROOT_PASSWORD from compose.override.yaml, then " + e.cmd("up") + " (the lab's random credentials are in credentials.json)"
	c := e.d.Creds
	if isDefault(c.MinIOAccessKey, c.MinIOSecretKey) {
		return fail("delete the state dir's credentials.json and run '"+e.cmd("down", "--volumes")+" && "+e.cmd("up")+"' to generate new ones",
			"the lab's credentials file holds a default MinIO key (%q)", c.MinIOAccessKey)
	}
	if o := e.minioReachable(ctx); o != nil {
		return *o
	}
	var evidence []string
	if cs, err := e.containers(); err == nil {
		if d, ok := cs[service.MinIOService]; ok {
			user, _ := envValue(d.Env, "MINIO_ROOT_USER")
			pw, _ := envValue(d.Env, "MINIO_ROOT_PASSWORD")
			if isDefault(user, pw) {
				return fail(fix, "container %s runs with a default MinIO root user %q", d.Name, user)
			}
			if user != c.MinIOAccessKey {
				return fail(fix, "container %s runs with root user %q, not the lab's generated key", d.Name, user)
			}
			evidence = append(evidence, "container root user is the lab's generated key")
		}
	}
	for _, pair := range DefaultCredentials {
		s, err := e.d.MinIO(pair[0], pair[1])
		if err != nil {
			return failErr(err, e.cmd("status"))
		}
		_, err = s.ListCheckpoints(ctx, store.DefaultBucket, probePrefix)
		switch code := s3Code(err); {
		case err == nil || code == "NoSuchBucket":
			return fail(fix, "MinIO at %s accepts the default credentials %s/%s", e.d.State.Probes.MinIO, pair[0], pair[1])
		case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied":
			evidence = append(evidence, fmt.Sprintf("%s/%s refused (%s)", pair[0], pair[1], code))
		default:
			return failErr(fmt.Errorf("probing MinIO with the default credentials: %w", err), e.cmd("status"))
		}
	}
	return pass("%s", strings.Join(evidence, "; "))
}

// outsideProbe is a bucket name outside the lab's: MinIO checks a user's
// policy before it looks for the bucket, so a limited user is refused
// (AccessDenied) whether it exists or not, and nothing is created.
const outsideProbe = "mltrain-verify-outside-ray"

// checkLabUser proves the students' side of MinIO: no container but MinIO's
// holds the root key, Jupyter holds the lab user's, and the lab user lists
// the bucket "ray" and is refused outside it. It reads only.
func checkLabUser(ctx context.Context, e *env) outcome {
	if e.d.MinIO == nil {
		return fail("report this as an mltrain bug", "no MinIO client configured")
	}
	fix := e.cmd("up") + " (it gives Jupyter and Ray the lab user and resets its policy)"
	c := e.d.Creds
	if c.MinIOLabAccessKey == "" || c.MinIOLabSecretKey == "" {
		return fail(fix, "the lab's credentials file has no MinIO lab user")
	}
	if o := e.minioReachable(ctx); o != nil {
		return *o
	}
	cs, err := e.containers()
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	var holders []string
	for svc, d := range cs {
		if svc == service.MinIOService {
			continue
		}
		for _, kv := range d.Env {
			if _, v, _ := strings.Cut(kv, "="); v == c.MinIOAccessKey || v == c.MinIOSecretKey {
				return fail("remove MinIO's root keys from compose.override.yaml, then "+fix,
					"container %s holds MinIO's root credentials (%s)", d.Name, strings.SplitN(kv, "=", 2)[0])
			}
		}
		holders = append(holders, svc)
	}
	j, ok := cs[service.JupyterService]
	if !ok {
		return fail(e.cmd("up"), "lab %q has no jupyter container", e.d.State.Project)
	}
	if k, _ := envValue(j.Env, "AWS_ACCESS_KEY_ID"); k != c.MinIOLabAccessKey {
		return fail(fix, "container %s has AWS_ACCESS_KEY_ID %q, not the lab user %q", j.Name, k, c.MinIOLabAccessKey)
	}
	s, err := e.d.MinIO(c.MinIOLabAccessKey, c.MinIOLabSecretKey)
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	if _, err := s.ListCheckpoints(ctx, store.DefaultBucket, probePrefix); err != nil {
		return failErr(fmt.Errorf("the lab user %s cannot list bucket %q: %w", c.MinIOLabAccessKey, store.DefaultBucket, err), fix)
	}
	_, err = s.ListCheckpoints(ctx, outsideProbe, "")
	switch code := s3Code(err); {
	case code == "AccessDenied":
	case err == nil || code == "NoSuchBucket":
		return fail(fix, "the lab user %s reaches buckets outside %q (listing %q was not refused)", c.MinIOLabAccessKey, store.DefaultBucket, outsideProbe)
	default:
		return failErr(fmt.Errorf("probing the lab user outside %q: %w", store.DefaultBucket, err), e.cmd("status"))
	}
	// Reading the bucket's policy is as much bucket configuration as
	// setting it: a user allowed it has more than object actions (s3:*,
	// as labs made before issue 31 had), and could make the bucket public.
	_, err = s.BucketPolicy(ctx, store.DefaultBucket)
	switch code := s3Code(err); {
	case code == "AccessDenied":
	case err == nil || code == "NoSuchBucketPolicy":
		return fail(fix, "the lab user %s may read bucket %q's policy: its policy allows more than object actions, so it could make the bucket public",
			c.MinIOLabAccessKey, store.DefaultBucket)
	default:
		return failErr(fmt.Errorf("probing the lab user's access to bucket %q's policy: %w", store.DefaultBucket, err), e.cmd("status"))
	}
	sort.Strings(holders)
	return pass("no root key in %s; jupyter uses lab user %s, which lists %q, is refused outside it and its policy (AccessDenied)",
		strings.Join(holders, ", "), c.MinIOLabAccessKey, store.DefaultBucket)
}

// checkPrivate proves nobody but the lab's users reaches the bucket Ray
// unpickles checkpoints from: it has no policy of its own (MinIO's only
// way to let anonymous requests in) and MinIO refuses an unsigned listing
// and read. It reads only.
func checkPrivate(ctx context.Context, e *env) outcome {
	if e.d.MinIO == nil {
		return fail("report this as an mltrain bug", "no MinIO client configured")
	}
	if o := e.minioReachable(ctx); o != nil {
		return *o
	}
	fix := e.cmd("up") + fmt.Sprintf(" (it removes bucket %q's policy; by hand: mc anonymous set none ALIAS/%s)", store.DefaultBucket, store.DefaultBucket)
	s, err := e.d.MinIO(e.d.Creds.MinIOAccessKey, e.d.Creds.MinIOSecretKey)
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	p, err := s.BucketPolicy(ctx, store.DefaultBucket)
	switch {
	case s3Code(err) == "NoSuchBucket":
		return fail(e.cmd("up")+" (it creates the bucket)", "MinIO at %s has no bucket %q", e.d.State.Probes.MinIO, store.DefaultBucket)
	case err != nil:
		return failErr(err, e.cmd("status"))
	}
	open, err := store.AnonymousAccess(ctx, store.Config{Endpoint: e.d.State.Probes.MinIO}, store.DefaultBucket, probePrefix+"none")
	if err != nil {
		return failErr(err, e.cmd("status"))
	}
	if p != "" {
		what := "its own policy"
		if anyone := store.AnonymousActions(p); len(anyone) > 0 {
			what += " granting anyone " + strings.Join(anyone, ", ")
		}
		return fail(fix, "bucket %q has %s: checkpoints Ray loads could come from outside the lab", store.DefaultBucket, what)
	}
	if len(open) > 0 {
		return fail(fix, "MinIO at %s lets anonymous requests %s bucket %q", e.d.State.Probes.MinIO, strings.Join(open, " and "), store.DefaultBucket)
	}
	return pass("bucket %q has no policy of its own; anonymous list and read refused (AccessDenied)", store.DefaultBucket)
}
